//! Dispatch pauses (the stop switch).
use super::{Conn, RowLock, changed_one, on_conn};
use chrono::{DateTime, Utc};

#[derive(Clone, Debug, sqlx::FromRow, serde::Serialize)]
pub struct PauseRow {
    pub scope: String,
    pub name: String,
    /// The person who paused it, or the part of the system (`domain::audit::SystemActor`'s label).
    pub paused_by: Option<String>,
    pub paused_by_system: Option<String>,
    pub paused_at: DateTime<Utc>,
    pub reason: String,
    /// The departments the pause belongs to, as JSON (NULL: set before that was recorded).
    pub set_for: Option<String>,
}

// A pause the system set (a failed stage of a bulk rerun) names that part instead of a person.
const OPEN_PAUSES: &str =
    "SELECT p.scope, p.name, u.display_name AS paused_by, p.paused_by_system, p.paused_at, p.reason, p.set_for
    FROM dispatch_pauses p LEFT JOIN users u ON u.id = p.paused_by WHERE p.resumed_at IS NULL";

/// The open pauses, oldest first.
pub async fn open(tx: &mut Conn) -> Result<Vec<PauseRow>, sqlx::Error> {
    let sql = format!("{OPEN_PAUSES} ORDER BY p.paused_at, p.id");
    on_conn!(tx, |c| sqlx::query_as(&sql).fetch_all(c).await)
}

/// The open pause of this workflow or connector, locked until the transaction ends.
pub async fn open_one(tx: &mut Conn, scope: &str, name: &str) -> Result<Option<PauseRow>, sqlx::Error> {
    let lock = tx.lock_clause(RowLock::Of("p"));
    let sql = format!("{OPEN_PAUSES} AND p.scope = $1 AND p.name = $2{lock}");
    on_conn!(tx, |c| sqlx::query_as(&sql).bind(scope).bind(name).fetch_optional(c).await)
}

/// Who opens a pause: a person, or a part of the system (its label, `domain::audit::SystemActor`).
pub enum Pauser<'a> {
    Person(i64),
    System(&'a str),
}

/// Opens a pause for the departments `set_for` (JSON); `false` when this workflow or connector is paused already.
pub async fn pause(
    tx: &mut Conn,
    (scope, name): (&str, &str),
    by: Pauser<'_>,
    reason: &str,
    set_for: &str,
    now: DateTime<Utc>,
) -> Result<bool, sqlx::Error> {
    let (person, system) = match by {
        Pauser::Person(id) => (Some(id), None),
        Pauser::System(label) => (None, Some(label)),
    };
    changed_one!(tx, |c| {
        sqlx::query(
            "INSERT INTO dispatch_pauses (scope, name, paused_by, paused_by_system, paused_at, reason, set_for)
         VALUES ($1, $2, $3, $4, $5, $6, $7)
         ON CONFLICT (scope, name) WHERE resumed_at IS NULL DO NOTHING",
        )
        .bind(scope)
        .bind(name)
        .bind(person)
        .bind(system)
        .bind(now)
        .bind(reason)
        .bind(set_for)
        .execute(c)
        .await
    })
}

/// Closes the open pause; `false` when there was none.
pub async fn resume(
    tx: &mut Conn,
    scope: &str,
    name: &str,
    user: i64,
    reason: &str,
    now: DateTime<Utc>,
) -> Result<bool, sqlx::Error> {
    changed_one!(tx, |c| sqlx::query(
        "UPDATE dispatch_pauses SET resumed_by = $3, resumed_at = $4, resume_reason = $5
         WHERE scope = $1 AND name = $2 AND resumed_at IS NULL"
    )
    .bind(scope)
    .bind(name)
    .bind(user)
    .bind(now)
    .bind(reason)
    .execute(c)
    .await)
}
