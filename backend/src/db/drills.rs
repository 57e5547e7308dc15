//! Drills: the database's mark, the drills with their faults and period, and each fault's practice operation.
use super::{Conn, changed_one, on_conn};
use chrono::{DateTime, Utc};
use domain::drills::Fault;

/// Whether this database is marked as a demo or a drill environment (drills are refused anywhere else).
pub async fn is_marked(tx: &mut Conn) -> Result<bool, sqlx::Error> {
    on_conn!(tx, |c| sqlx::query_scalar::<_, i64>("SELECT COUNT(*) FROM database_marks").fetch_one(c).await)
        .map(|n| n > 0)
}

/// Marks the database (`demo` or `drill`); marking twice changes nothing.
pub async fn mark(tx: &mut Conn, mark: &str, now: DateTime<Utc>) -> Result<(), sqlx::Error> {
    on_conn!(tx, |c| sqlx::query(
        "INSERT INTO database_marks (mark, marked_at) VALUES ($1, $2) ON CONFLICT (mark) DO NOTHING"
    )
    .bind(mark)
    .bind(now)
    .execute(c)
    .await
    .map(drop))
}

#[derive(Clone, Debug, sqlx::FromRow, serde::Serialize)]
pub struct DrillRow {
    pub id: String,
    pub started_by: String,
    pub started_at: DateTime<Utc>,
    pub ends_at: DateTime<Utc>,
    pub ended_at: Option<DateTime<Utc>>,
    pub faults_json: String,
    pub note: String,
}

impl DrillRow {
    /// The drill's faults, stored as a JSON list of their names.
    pub fn faults(&self) -> Vec<Fault> {
        let names = serde_json::from_str::<Vec<String>>(&self.faults_json).unwrap_or_default();
        names.iter().filter_map(|f| Fault::parse(f)).collect()
    }
}

const DRILL_SELECT: &str =
    "SELECT d.id, u.display_name AS started_by, d.started_at, d.ends_at, d.ended_at, d.faults_json, d.note
    FROM drills d JOIN users u ON u.id = d.started_by";

pub async fn insert(
    tx: &mut Conn,
    id: &str,
    started_by: i64,
    faults: &[Fault],
    note: &str,
    now: DateTime<Utc>,
    ends_at: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    on_conn!(tx, |c| sqlx::query(
        "INSERT INTO drills (id, started_by, started_at, ends_at, faults_json, note) VALUES ($1, $2, $3, $4, $5, $6)"
    )
    .bind(id)
    .bind(started_by)
    .bind(now)
    .bind(ends_at)
    .bind(serde_json::to_string(&faults.iter().map(|f| f.as_str()).collect::<Vec<_>>()).unwrap_or_default())
    .bind(note)
    .execute(c)
    .await
    .map(drop))
}

pub async fn by_id(tx: &mut Conn, id: &str) -> Result<Option<DrillRow>, sqlx::Error> {
    let sql = format!("{DRILL_SELECT} WHERE d.id = $1");
    on_conn!(tx, |c| sqlx::query_as(&sql).bind(id).fetch_optional(c).await)
}

/// The newest drills.
pub async fn recent(tx: &mut Conn, limit: i64) -> Result<Vec<DrillRow>, sqlx::Error> {
    let sql = format!("{DRILL_SELECT} ORDER BY d.started_at DESC, d.id DESC LIMIT $1");
    on_conn!(tx, |c| sqlx::query_as(&sql).bind(limit).fetch_all(c).await)
}

/// The drills whose faults are in force at `now`.
pub async fn active(tx: &mut Conn, now: DateTime<Utc>) -> Result<Vec<DrillRow>, sqlx::Error> {
    let sql = format!("{DRILL_SELECT} WHERE d.ends_at > $1 AND d.ended_at IS NULL ORDER BY d.started_at");
    on_conn!(tx, |c| sqlx::query_as(&sql).bind(now).fetch_all(c).await)
}

/// The fault a drill in force at `now` injects into this operation: only a drill's own practice operations meet
/// one (the demo systems ask before each call).
pub async fn faults_in_force(tx: &mut Conn, now: DateTime<Utc>, process_id: &str) -> Result<Vec<Fault>, sqlx::Error> {
    let names: Vec<String> = on_conn!(tx, |c| sqlx::query_scalar(
        "SELECT o.fault FROM drill_operations o JOIN drills d ON d.id = o.drill_id
         WHERE o.process_id = $1 AND d.ends_at > $2 AND d.ended_at IS NULL"
    )
    .bind(process_id)
    .bind(now)
    .fetch_all(c)
    .await)?;
    Ok(names.iter().filter_map(|n| Fault::parse(n)).collect())
}

/// Ends the drill's faults now; `false` when it had ended already.
pub async fn end(tx: &mut Conn, id: &str, now: DateTime<Utc>) -> Result<bool, sqlx::Error> {
    changed_one!(tx, |c| sqlx::query(
        "UPDATE drills SET ended_at = $2 WHERE id = $1 AND ended_at IS NULL AND ends_at > $2"
    )
    .bind(id)
    .bind(now)
    .execute(c)
    .await)
}

pub async fn insert_operation(tx: &mut Conn, drill: &str, fault: &str, process_id: &str) -> Result<(), sqlx::Error> {
    on_conn!(tx, |c| sqlx::query("INSERT INTO drill_operations (drill_id, fault, process_id) VALUES ($1, $2, $3)")
        .bind(drill)
        .bind(fault)
        .bind(process_id)
        .execute(c)
        .await
        .map(drop))
}

/// Each fault's practice operation: (fault, process ID).
pub async fn operations(tx: &mut Conn, drill: &str) -> Result<Vec<(String, String)>, sqlx::Error> {
    on_conn!(tx, |c| sqlx::query_as(
        "SELECT fault, process_id FROM drill_operations WHERE drill_id = $1 ORDER BY process_id"
    )
    .bind(drill)
    .fetch_all(c)
    .await)
}
