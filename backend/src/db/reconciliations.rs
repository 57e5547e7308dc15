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

#[derive(Clone)]
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
    insert_all(tx, &[(new.clone(), now)]).await
}

/// Records look-ups, each with when it was made (of different steps, or the same step more than once, in
/// order) and makes each step's last verdict its latest: two statements for the lot, so that a batch of
/// dispatches records its look-ups in a few round trips.
pub async fn insert_all(tx: &mut Conn, news: &[(NewReconciliation<'_>, DateTime<Utc>)]) -> Result<(), sqlx::Error> {
    // 50 look-ups a statement: 450 parameters.
    for chunk in news.chunks(50) {
        let rows: Vec<String> = (0..chunk.len()).map(|i| format!("({})", super::params(i * 9, 9))).collect();
        let sql = format!(
            "INSERT INTO reconciliations
             (step_id, connector, verdict, external_id, evidence_json, asked_by, checked_at, records, recorded_by)
             VALUES {}",
            rows.join(", ")
        );
        on_conn!(tx, |c| {
            let mut query = sqlx::query(&sql);
            for (new, checked_at) in chunk {
                query = query
                    .bind(new.step_id)
                    .bind(new.connector)
                    .bind(new.verdict)
                    .bind(new.external_id)
                    .bind(new.evidence_json)
                    .bind(new.asked_by)
                    .bind(checked_at)
                    .bind(new.records)
                    .bind(new.recorded_by);
            }
            query.execute(&mut *c).await.map(drop)
        })?;
        // Each step once: its last verdict in the chunk, its revision moved by each look-up.
        let mut steps: Vec<(i64, &str, i64)> = Vec::new();
        for (new, _) in chunk {
            match steps.iter_mut().find(|(id, ..)| *id == new.step_id) {
                Some(step) => (step.1, step.2) = (new.verdict, step.2 + 1),
                None => steps.push((new.step_id, new.verdict, 1)),
            }
        }
        let n = steps.len();
        let sql = format!(
            "UPDATE steps SET latest_verdict = {}, revision = revision + {} WHERE id IN ({})",
            super::case_when("id", 0, n),
            super::case_when("id", 2 * n, n),
            super::params(4 * n, n)
        );
        on_conn!(tx, |c| {
            let mut query = sqlx::query(&sql);
            for (id, verdict, _) in &steps {
                query = query.bind(id).bind(verdict);
            }
            for (id, _, count) in &steps {
                query = query.bind(id).bind(count);
            }
            for (id, ..) in &steps {
                query = query.bind(id);
            }
            query.execute(c).await.map(drop)
        })?;
    }
    Ok(())
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
