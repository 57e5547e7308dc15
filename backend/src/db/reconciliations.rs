//! Reconciliation results: one row per look-up of one step; the step keeps the latest verdict.
use super::{Conn, on_conn};
use chrono::{DateTime, Utc};

#[derive(Clone, Debug, sqlx::FromRow, serde::Serialize)]
pub struct ReconciliationRow {
    pub id: i64,
    pub step_id: i64,
    pub connector: String,
    pub verdict: String,
    pub external_id: Option<String>,
    pub evidence_json: String,
    pub asked_by: String,
    pub checked_at: DateTime<Utc>,
}

pub struct NewReconciliation<'a> {
    pub step_id: i64,
    pub connector: &'a str,
    pub verdict: &'a str,
    pub external_id: Option<&'a str>,
    pub evidence_json: &'a str,
    pub asked_by: &'a str,
    /// The person who recorded a manual verdict (`None` for a look-up).
    pub recorded_by: Option<i64>,
    /// Records the outside system holds for the key (more than one: a double send).
    pub records: i64,
}

/// Records a look-up and makes its verdict the step's latest, in the caller's transaction.
pub async fn insert(tx: &mut Conn, new: &NewReconciliation<'_>, now: DateTime<Utc>) -> Result<(), sqlx::Error> {
    on_conn!(tx, |c| {
        sqlx::query(
            "INSERT INTO reconciliations
             (step_id, connector, verdict, external_id, evidence_json, asked_by, checked_at, records, recorded_by)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
        )
        .bind(new.step_id)
        .bind(new.connector)
        .bind(new.verdict)
        .bind(new.external_id)
        .bind(new.evidence_json)
        .bind(new.asked_by)
        .bind(now)
        .bind(new.records)
        .bind(new.recorded_by)
        .execute(&mut *c)
        .await
        .map(drop)
    })?;
    on_conn!(tx, |c| sqlx::query("UPDATE steps SET latest_verdict = $1, revision = revision + 1 WHERE id = $2")
        .bind(new.verdict)
        .bind(new.step_id)
        .execute(c)
        .await
        .map(drop))
}

/// The latest look-up of each step of an operation.
pub async fn latest_for_operation(tx: &mut Conn, operation_id: i64) -> Result<Vec<ReconciliationRow>, sqlx::Error> {
    on_conn!(tx, |c| {
        sqlx::query_as(
            "SELECT r.id, r.step_id, r.connector, r.verdict, r.external_id, r.evidence_json, r.asked_by, r.checked_at
         FROM reconciliations r
         JOIN steps s ON s.id = r.step_id
         WHERE s.operation_id = $1
           AND r.id = (SELECT MAX(id) FROM reconciliations WHERE step_id = s.id)",
        )
        .bind(operation_id)
        .fetch_all(c)
        .await
    })
}

/// Every look-up of an operation's steps, oldest first (the evidence bundle).
pub async fn all_for_operation(tx: &mut Conn, operation_id: i64) -> Result<Vec<ReconciliationRow>, sqlx::Error> {
    on_conn!(tx, |c| sqlx::query_as(
        "SELECT r.id, r.step_id, r.connector, r.verdict, r.external_id, r.evidence_json, r.asked_by, r.checked_at
         FROM reconciliations r JOIN steps s ON s.id = r.step_id WHERE s.operation_id = $1 ORDER BY r.id"
    )
    .bind(operation_id)
    .fetch_all(c)
    .await)
}
