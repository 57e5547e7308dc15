//! The stages of a bulk rerun: one row per stage started, with its verdict and who resumed after a failed one.
use super::states::Stored;
use super::{Conn, changed_one, on_conn};
use chrono::{DateTime, Utc};
use domain::canary::StageOutcome;

#[derive(Clone, Debug, sqlx::FromRow, serde::Serialize)]
pub struct StageRow {
    pub stage: i64,
    pub size: i64,
    pub started_at: DateTime<Utc>,
    pub reported_at: Option<DateTime<Utc>>,
    /// `None` while it runs.
    #[sqlx(try_from = "Stored<Option<StageOutcome>>")]
    pub verdict: Option<StageOutcome>,
    pub verdict_at: Option<DateTime<Utc>>,
    /// The failing reruns with why (JSON).
    pub failures_json: Option<String>,
    pub resumed_by: Option<String>,
    pub resumed_at: Option<DateTime<Utc>>,
    pub resume_reason: Option<String>,
}

const STAGE_SELECT: &str = "SELECT s.stage, s.size, s.started_at, s.reported_at, s.verdict, s.verdict_at,
        s.failures_json, u.display_name AS resumed_by, s.resumed_at, s.resume_reason
    FROM rerun_batch_stages s LEFT JOIN users u ON u.id = s.resumed_by";

/// Every stage started, in order.
pub async fn of_batch(tx: &mut Conn, batch: &str) -> Result<Vec<StageRow>, sqlx::Error> {
    let sql = format!("{STAGE_SELECT} WHERE s.batch_id = $1 ORDER BY s.stage");
    on_conn!(tx, |c| sqlx::query_as(&sql).bind(batch).fetch_all(c).await)
}

pub async fn get(tx: &mut Conn, batch: &str, stage: i64) -> Result<Option<StageRow>, sqlx::Error> {
    let sql = format!("{STAGE_SELECT} WHERE s.batch_id = $1 AND s.stage = $2");
    on_conn!(tx, |c| sqlx::query_as(&sql).bind(batch).bind(stage).fetch_optional(c).await)
}

pub async fn start(tx: &mut Conn, batch: &str, stage: i64, size: i64, now: DateTime<Utc>) -> Result<(), sqlx::Error> {
    on_conn!(tx, |c| sqlx::query(
        "INSERT INTO rerun_batch_stages (batch_id, stage, size, started_at) VALUES ($1, $2, $3, $4)"
    )
    .bind(batch)
    .bind(stage)
    .bind(size)
    .bind(now)
    .execute(c)
    .await
    .map(drop))
}

/// Every rerun of the stage was reported: the settle time runs from now.
pub async fn reported(tx: &mut Conn, batch: &str, stage: i64, now: DateTime<Utc>) -> Result<(), sqlx::Error> {
    on_conn!(tx, |c| sqlx::query(
        "UPDATE rerun_batch_stages SET reported_at = $3 WHERE batch_id = $1 AND stage = $2 AND reported_at IS NULL"
    )
    .bind(batch)
    .bind(stage)
    .bind(now)
    .execute(c)
    .await
    .map(drop))
}

pub async fn decided(
    tx: &mut Conn,
    batch: &str,
    stage: i64,
    (verdict, failures_json): (StageOutcome, Option<&str>),
    now: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    on_conn!(tx, |c| sqlx::query(
        "UPDATE rerun_batch_stages SET verdict = $3, failures_json = $4, verdict_at = $5
         WHERE batch_id = $1 AND stage = $2"
    )
    .bind(batch)
    .bind(stage)
    .bind(Stored(verdict))
    .bind(failures_json)
    .bind(now)
    .execute(c)
    .await
    .map(drop))
}

/// One manager's decision that the batch goes on after this failed stage (`false`: they gave one already).
pub async fn decide_resumption(
    tx: &mut Conn,
    batch: &str,
    stage: i64,
    (user, why): (i64, &str),
    now: DateTime<Utc>,
) -> Result<bool, sqlx::Error> {
    let sql = "INSERT INTO rerun_batch_stage_resumptions (batch_id, stage, user_id, reason, decided_at)
               VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING";
    changed_one!(tx, |c| sqlx::query(sql).bind(batch).bind(stage).bind(user).bind(why).bind(now).execute(c).await)
}

/// Who decided the batch goes on after this failed stage so far.
pub async fn resumption_deciders(tx: &mut Conn, batch: &str, stage: i64) -> Result<Vec<i64>, sqlx::Error> {
    let sql =
        "SELECT user_id FROM rerun_batch_stage_resumptions WHERE batch_id = $1 AND stage = $2 ORDER BY decided_at";
    on_conn!(tx, |c| sqlx::query_scalar(sql).bind(batch).bind(stage).fetch_all(c).await)
}

/// The batch goes on after this failed stage: the decision that made the quorum, with its reason.
pub async fn resumed(
    tx: &mut Conn,
    batch: &str,
    stage: i64,
    (user, why): (i64, &str),
    now: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    on_conn!(tx, |c| sqlx::query(
        "UPDATE rerun_batch_stages SET resumed_by = $3, resume_reason = $4, resumed_at = $5
         WHERE batch_id = $1 AND stage = $2"
    )
    .bind(batch)
    .bind(stage)
    .bind(user)
    .bind(why)
    .bind(now)
    .execute(c)
    .await
    .map(drop))
}
