//! Holds on operations.
use super::{Conn, changed_one, on_conn};
use chrono::{DateTime, Utc};

#[derive(Clone, Debug, sqlx::FromRow, serde::Serialize)]
pub struct HoldRow {
    pub id: i64,
    pub placed_by: String,
    pub placed_at: DateTime<Utc>,
    pub reason: String,
}

pub async fn place(
    tx: &mut Conn,
    operation_id: i64,
    user_id: i64,
    reason: &str,
    now: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    on_conn!(tx, |c| sqlx::query(
        "INSERT INTO holds (operation_id, placed_by, placed_at, reason) VALUES ($1, $2, $3, $4)"
    )
    .bind(operation_id)
    .bind(user_id)
    .bind(now)
    .bind(reason)
    .execute(c)
    .await
    .map(drop))
}

/// The open hold of an operation, with who placed it (display name).
pub async fn open(tx: &mut Conn, operation_id: i64) -> Result<Option<HoldRow>, sqlx::Error> {
    on_conn!(tx, |c| sqlx::query_as(
        "SELECT h.id, u.display_name AS placed_by, h.placed_at, h.reason
         FROM holds h JOIN users u ON u.id = h.placed_by
         WHERE h.operation_id = $1 AND h.released_at IS NULL"
    )
    .bind(operation_id)
    .fetch_optional(c)
    .await)
}

pub async fn release(
    tx: &mut Conn,
    hold_id: i64,
    user_id: i64,
    reason: &str,
    now: DateTime<Utc>,
) -> Result<bool, sqlx::Error> {
    changed_one!(tx, |c| {
        sqlx::query(
        "UPDATE holds SET released_by = $2, released_at = $3, release_reason = $4 WHERE id = $1 AND released_at IS NULL"
    )
    .bind(hold_id)
    .bind(user_id)
    .bind(now)
    .bind(reason)
    .execute(c)
    .await
    })
}
