//! AI generation attempts per step.
use super::{Conn, changed_one, on_conn};
use chrono::{DateTime, Utc};
use domain::ai::AiStatus;

#[derive(Clone, Debug, sqlx::FromRow, serde::Serialize)]
pub struct AttemptRow {
    pub step_id: i64,
    pub result_id: String,
    pub background_status: Option<String>,
    pub cancel_requested_at: Option<DateTime<Utc>>,
    pub cancel_confirmed_at: Option<DateTime<Utc>>,
    pub input_tokens: Option<i64>,
    pub output_tokens: Option<i64>,
    pub cost_micro_yen: Option<i64>,
    pub adopted: bool,
    pub first_seen_at: DateTime<Utc>,
}

/// What was just learned about one generation; unknown parts (`None`) keep what is stored.
pub struct Seen<'a> {
    pub step_id: i64,
    pub result_id: &'a str,
    pub status: Option<&'a str>,
    pub input_tokens: Option<i64>,
    pub output_tokens: Option<i64>,
    pub cost_micro_yen: Option<i64>,
    /// When the provider confirmed a cancel, if this look says it did; the first confirmation is kept.
    pub cancel_confirmed_at: Option<DateTime<Utc>>,
}

/// Records a generation or updates it.
pub async fn upsert(tx: &mut Conn, seen: &Seen<'_>, now: DateTime<Utc>) -> Result<(), sqlx::Error> {
    on_conn!(tx, |c| sqlx::query(
        "INSERT INTO ai_attempts (step_id, result_id, background_status, cancel_confirmed_at, input_tokens,
             output_tokens, cost_micro_yen, first_seen_at, updated_at)
         VALUES ($1, $2, $3, $8, $4, $5, $6, $7, $7)
         ON CONFLICT (step_id, result_id) DO UPDATE SET
             background_status = COALESCE(excluded.background_status, ai_attempts.background_status),
             cancel_confirmed_at = COALESCE(ai_attempts.cancel_confirmed_at, excluded.cancel_confirmed_at),
             input_tokens = COALESCE(excluded.input_tokens, ai_attempts.input_tokens),
             output_tokens = COALESCE(excluded.output_tokens, ai_attempts.output_tokens),
             cost_micro_yen = COALESCE(excluded.cost_micro_yen, ai_attempts.cost_micro_yen),
             updated_at = excluded.updated_at"
    )
    .bind(seen.step_id)
    .bind(seen.result_id)
    .bind(seen.status)
    .bind(seen.input_tokens)
    .bind(seen.output_tokens)
    .bind(seen.cost_micro_yen)
    .bind(now)
    .bind(seen.cancel_confirmed_at)
    .execute(&mut *c)
    .await
    .map(drop))?;
    // The first completed generation is adopted unless someone adopted one already.
    on_conn!(tx, |c| sqlx::query(
        "UPDATE ai_attempts SET adopted = TRUE
         WHERE step_id = $1 AND result_id = $2 AND background_status = $3
           AND NOT EXISTS (SELECT 1 FROM ai_attempts other WHERE other.step_id = $1 AND other.adopted)"
    )
    .bind(seen.step_id)
    .bind(seen.result_id)
    .bind(AiStatus::Completed.as_str())
    .execute(c)
    .await
    .map(drop))
}

/// The integration asked the provider to cancel the step's running generations.
pub async fn cancel_requested(tx: &mut Conn, step_id: i64, now: DateTime<Utc>) -> Result<u64, sqlx::Error> {
    on_conn!(tx, |c| sqlx::query(
        "UPDATE ai_attempts SET cancel_requested_at = $2, updated_at = $2
         WHERE step_id = $1 AND cancel_requested_at IS NULL
           AND (background_status IS NULL OR background_status IN ($3, $4))"
    )
    .bind(step_id)
    .bind(now)
    .bind(AiStatus::RUNNING[0].as_str())
    .bind(AiStatus::RUNNING[1].as_str())
    .execute(c)
    .await
    .map(|r| r.rows_affected()))
}

/// Makes this completed generation the adopted one of its step; `false` when the step has no such one.
pub async fn adopt(tx: &mut Conn, step_id: i64, result_id: &str) -> Result<bool, sqlx::Error> {
    let completed = on_conn!(tx, |c| sqlx::query_scalar::<_, i64>(
        "SELECT COUNT(*) FROM ai_attempts WHERE step_id = $1 AND result_id = $2 AND background_status = $3"
    )
    .bind(step_id)
    .bind(result_id)
    .bind(AiStatus::Completed.as_str())
    .fetch_one(&mut *c)
    .await)?;
    if completed == 0 {
        return Ok(false);
    }
    on_conn!(tx, |c| sqlx::query("UPDATE ai_attempts SET adopted = FALSE WHERE step_id = $1 AND adopted")
        .bind(step_id)
        .execute(&mut *c)
        .await
        .map(drop))?;
    changed_one!(tx, |c| sqlx::query("UPDATE ai_attempts SET adopted = TRUE WHERE step_id = $1 AND result_id = $2")
        .bind(step_id)
        .bind(result_id)
        .execute(c)
        .await)
}

pub async fn for_operation(tx: &mut Conn, operation_id: i64) -> Result<Vec<AttemptRow>, sqlx::Error> {
    on_conn!(tx, |c| sqlx::query_as(
        "SELECT a.step_id, a.result_id, a.background_status, a.cancel_requested_at, a.cancel_confirmed_at,
                a.input_tokens, a.output_tokens, a.cost_micro_yen, a.adopted, a.first_seen_at
         FROM ai_attempts a JOIN steps s ON s.id = a.step_id
         WHERE s.operation_id = $1 ORDER BY a.step_id, a.first_seen_at, a.id"
    )
    .bind(operation_id)
    .fetch_all(c)
    .await)
}
