//! Idempotency records of the ingestion API, per client and key.
use super::states::Stored;
use super::{Conn, changed_one, on_conn};
use chrono::{DateTime, Utc};

#[derive(Clone, Debug, sqlx::FromRow)]
pub struct IdempotencyRow {
    pub fingerprint: String,
    #[sqlx(try_from = "Stored<domain::idempotency::IdempotencyState>")]
    pub state: domain::idempotency::IdempotencyState,
    pub response_status: Option<i64>,
    pub response_body: Option<String>,
    pub created_at: DateTime<Utc>,
}

/// Claims the key for this request; `false` when someone holds it already (the row decides what next).
pub async fn claim(
    tx: &mut Conn,
    client: i64,
    key: &str,
    fingerprint: &str,
    now: DateTime<Utc>,
    expires_at: DateTime<Utc>,
) -> Result<bool, sqlx::Error> {
    changed_one!(tx, |c| {
        sqlx::query(
        "INSERT INTO idempotency_records (api_client_id, idempotency_key, fingerprint, state, created_at, expires_at)
         VALUES ($1, $2, $3, 'in_flight', $4, $5) ON CONFLICT DO NOTHING"
    )
    .bind(client)
    .bind(key)
    .bind(fingerprint)
    .bind(now)
    .bind(expires_at)
    .execute(c)
    .await
    })
}

pub async fn get(tx: &mut Conn, client: i64, key: &str) -> Result<Option<IdempotencyRow>, sqlx::Error> {
    on_conn!(tx, |c| sqlx::query_as(
        "SELECT fingerprint, state, response_status, response_body, created_at FROM idempotency_records
         WHERE api_client_id = $1 AND idempotency_key = $2"
    )
    .bind(client)
    .bind(key)
    .fetch_optional(c)
    .await)
}

/// Takes over a claim whose holder died (in flight since before `stale_before`); `true` when taken.
pub async fn take_over_stale(
    tx: &mut Conn,
    client: i64,
    key: &str,
    stale_before: DateTime<Utc>,
    now: DateTime<Utc>,
) -> Result<bool, sqlx::Error> {
    changed_one!(tx, |c| sqlx::query(
        "UPDATE idempotency_records SET created_at = $4
         WHERE api_client_id = $1 AND idempotency_key = $2 AND state = 'in_flight' AND created_at < $3"
    )
    .bind(client)
    .bind(key)
    .bind(stale_before)
    .bind(now)
    .execute(c)
    .await)
}

pub async fn complete(tx: &mut Conn, client: i64, key: &str, status: u16, body: &str) -> Result<(), sqlx::Error> {
    on_conn!(tx, |c| sqlx::query(
        "UPDATE idempotency_records SET state = 'done', response_status = $3, response_body = $4
         WHERE api_client_id = $1 AND idempotency_key = $2"
    )
    .bind(client)
    .bind(key)
    .bind(i64::from(status))
    .bind(body)
    .execute(c)
    .await
    .map(drop))
}

pub async fn purge_expired(tx: &mut Conn, now: DateTime<Utc>) -> Result<u64, sqlx::Error> {
    on_conn!(tx, |c| sqlx::query("DELETE FROM idempotency_records WHERE expires_at < $1 AND state = 'done'")
        .bind(now)
        .execute(c)
        .await
        .map(|r| r.rows_affected()))
}
