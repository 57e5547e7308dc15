//! Who prepared a rerun request or a bulk rerun (`domain::approval::MakerPart`): recorded as they do it, read
//! when someone decides.
use super::states::Stored;
use super::{Conn, on_conn};
use chrono::{DateTime, Utc};
use domain::approval::{Maker, MakerPart};

#[derive(sqlx::FromRow)]
struct MakerRow {
    user_id: i64,
    #[sqlx(try_from = "Stored<MakerPart>")]
    part: MakerPart,
}

impl From<MakerRow> for Maker {
    fn from(row: MakerRow) -> Self {
        Maker { user_id: row.user_id, part: row.part }
    }
}

/// Records a part in preparing a request (once per person and part).
pub async fn add_to_request(
    tx: &mut Conn,
    request_id: &str,
    maker: Maker,
    now: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    let sql = "INSERT INTO rerun_request_makers (request_id, user_id, part, at) VALUES ($1, $2, $3, $4)
         ON CONFLICT DO NOTHING";
    added(tx, sql, request_id, maker, now).await
}

/// Records a part in preparing a bulk rerun (once per person and part).
pub async fn add_to_batch(tx: &mut Conn, batch_id: &str, maker: Maker, now: DateTime<Utc>) -> Result<(), sqlx::Error> {
    let sql =
        "INSERT INTO rerun_batch_makers (batch_id, user_id, part, at) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING";
    added(tx, sql, batch_id, maker, now).await
}

async fn added(tx: &mut Conn, sql: &str, id: &str, maker: Maker, now: DateTime<Utc>) -> Result<(), sqlx::Error> {
    on_conn!(tx, |c| sqlx::query(sql)
        .bind(id)
        .bind(maker.user_id)
        .bind(Stored(maker.part))
        .bind(now)
        .execute(c)
        .await
        .map(drop))
}

/// A request's makers, in the order they took part.
pub async fn of_request(tx: &mut Conn, request_id: &str) -> Result<Vec<Maker>, sqlx::Error> {
    listed(tx, "SELECT user_id, part FROM rerun_request_makers WHERE request_id = $1 ORDER BY at, user_id", request_id)
        .await
}

/// The makers of every request a bulk rerun made for its members.
pub async fn of_batch_members(tx: &mut Conn, batch_id: &str) -> Result<Vec<Maker>, sqlx::Error> {
    let sql =
        "SELECT DISTINCT m.user_id, m.part FROM rerun_request_makers m JOIN rerun_requests r ON r.id = m.request_id
         WHERE r.batch_id = $1";
    listed(tx, sql, batch_id).await
}

/// A bulk rerun's own makers, in the order they took part.
pub async fn of_batch(tx: &mut Conn, batch_id: &str) -> Result<Vec<Maker>, sqlx::Error> {
    listed(tx, "SELECT user_id, part FROM rerun_batch_makers WHERE batch_id = $1 ORDER BY at, user_id", batch_id).await
}

async fn listed(tx: &mut Conn, sql: &str, id: &str) -> Result<Vec<Maker>, sqlx::Error> {
    let rows: Vec<MakerRow> = on_conn!(tx, |c| sqlx::query_as(sql).bind(id).fetch_all(c).await)?;
    Ok(rows.into_iter().map(Maker::from).collect())
}

/// Who recorded the manual verdicts an operation's steps now rest on (a step's latest verdict, set by hand).
pub async fn verdict_recorders(tx: &mut Conn, operation_id: i64) -> Result<Vec<i64>, sqlx::Error> {
    on_conn!(tx, |c| sqlx::query_scalar(
        "SELECT DISTINCT r.recorded_by FROM reconciliations r JOIN steps s ON s.id = r.step_id
         WHERE s.operation_id = $1 AND r.recorded_by IS NOT NULL
           AND r.id = (SELECT MAX(id) FROM reconciliations WHERE step_id = s.id)"
    )
    .bind(operation_id)
    .fetch_all(c)
    .await)
}
