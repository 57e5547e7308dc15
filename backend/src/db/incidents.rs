//! Incident reports, their operations and prevention actions, and acknowledged known patterns.
use super::{Conn, RowLock, changed_one, on_conn};
use chrono::{DateTime, NaiveDate, Utc};

#[derive(Clone, Debug, sqlx::FromRow)]
pub struct IncidentRow {
    pub id: i64,
    pub department: String,
    pub title: String,
    pub occurred_at: DateTime<Utc>,
    pub impact: String,
    pub cause: String,
    pub response: String,
    /// The display name of who filed it.
    pub created_by: String,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

const INCIDENT_SELECT: &str = "SELECT i.id, i.department, i.title, i.occurred_at, i.impact, i.cause, i.response,
    u.display_name AS created_by, i.created_at, i.updated_at
    FROM incidents i JOIN users u ON u.id = i.created_by";

/// The texts a report is made of (filed or edited together).
pub struct IncidentTexts<'a> {
    pub title: &'a str,
    pub occurred_at: DateTime<Utc>,
    pub impact: &'a str,
    pub cause: &'a str,
    pub response: &'a str,
}

#[derive(Clone, Debug, sqlx::FromRow)]
pub struct LinkedRow {
    pub operation_id: i64,
    pub process_id: String,
    pub event: Option<String>,
    pub failure_class: Option<String>,
    pub linked_at: DateTime<Utc>,
}

#[derive(Clone, Debug, sqlx::FromRow)]
pub struct ActionRow {
    pub id: i64,
    pub incident_id: i64,
    pub description: String,
    pub owner_id: i64,
    pub owner: String,
    pub due_on: NaiveDate,
    pub status: String,
    pub done_at: Option<DateTime<Utc>>,
}

const ACTION_SELECT: &str = "SELECT a.id, a.incident_id, a.description, a.owner_id, u.display_name AS owner, a.due_on,
    a.status, a.done_at FROM prevention_actions a JOIN users u ON u.id = a.owner_id";

#[derive(Clone, Debug, sqlx::FromRow)]
pub struct SummaryRow {
    pub id: i64,
    pub department: String,
    pub title: String,
    pub occurred_at: DateTime<Utc>,
    pub open_actions: i64,
    pub overdue_actions: i64,
}

#[derive(Clone, Debug, sqlx::FromRow)]
pub struct OverdueRow {
    pub incident_id: i64,
    pub title: String,
    pub department: String,
    pub action_id: i64,
    pub description: String,
    pub owner: String,
    pub due_on: NaiveDate,
}

#[derive(Clone, Debug, sqlx::FromRow)]
pub struct PatternRow {
    pub incident_id: i64,
    pub title: String,
    pub occurred_at: DateTime<Utc>,
    pub response: String,
    pub acknowledged_evidence: Option<String>,
    pub acknowledged_by: Option<String>,
    pub acknowledged_at: Option<DateTime<Utc>>,
}

pub async fn insert(
    tx: &mut Conn,
    department: &str,
    texts: &IncidentTexts<'_>,
    created_by: i64,
    now: DateTime<Utc>,
) -> Result<i64, sqlx::Error> {
    on_conn!(tx, |c| {
        sqlx::query_scalar(
            "INSERT INTO incidents
             (department, title, occurred_at, impact, cause, response, created_by, created_at, updated_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8) RETURNING id",
        )
        .bind(department)
        .bind(texts.title)
        .bind(texts.occurred_at)
        .bind(texts.impact)
        .bind(texts.cause)
        .bind(texts.response)
        .bind(created_by)
        .bind(now)
        .fetch_one(c)
        .await
    })
}

pub async fn by_id(tx: &mut Conn, id: i64) -> Result<Option<IncidentRow>, sqlx::Error> {
    let sql = format!("{INCIDENT_SELECT} WHERE i.id = $1");
    on_conn!(tx, |c| sqlx::query_as(&sql).bind(id).fetch_optional(c).await)
}

/// The report, locked until the transaction ends (PostgreSQL: the row; SQLite: the write transaction already
/// excludes every other writer), so that each change's audit event has the true "before".
pub async fn lock(tx: &mut Conn, id: i64) -> Result<Option<IncidentRow>, sqlx::Error> {
    let sql = format!("{INCIDENT_SELECT} WHERE i.id = $1{}", tx.lock_clause(RowLock::Of("i")));
    on_conn!(tx, |c| sqlx::query_as(&sql).bind(id).fetch_optional(c).await)
}

pub async fn update_texts(
    tx: &mut Conn,
    id: i64,
    texts: &IncidentTexts<'_>,
    now: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    on_conn!(tx, |c| sqlx::query(
        "UPDATE incidents SET title = $2, occurred_at = $3, impact = $4, cause = $5, response = $6, updated_at = $7
         WHERE id = $1"
    )
    .bind(id)
    .bind(texts.title)
    .bind(texts.occurred_at)
    .bind(texts.impact)
    .bind(texts.cause)
    .bind(texts.response)
    .bind(now)
    .execute(c)
    .await
    .map(drop))
}

pub async fn touch(tx: &mut Conn, id: i64, now: DateTime<Utc>) -> Result<(), sqlx::Error> {
    on_conn!(tx, |c| sqlx::query("UPDATE incidents SET updated_at = $2 WHERE id = $1")
        .bind(id)
        .bind(now)
        .execute(c)
        .await
        .map(drop))
}

/// Links an operation with its event and failure class as they are now; `false` when already linked.
pub async fn link(
    tx: &mut Conn,
    incident_id: i64,
    operation_id: i64,
    event: Option<&str>,
    failure_class: Option<&str>,
    now: DateTime<Utc>,
) -> Result<bool, sqlx::Error> {
    changed_one!(tx, |c| sqlx::query(
        "INSERT INTO incident_operations (incident_id, operation_id, event, failure_class, linked_at)
         VALUES ($1, $2, $3, $4, $5) ON CONFLICT (incident_id, operation_id) DO NOTHING"
    )
    .bind(incident_id)
    .bind(operation_id)
    .bind(event)
    .bind(failure_class)
    .bind(now)
    .execute(c)
    .await)
}

pub async fn linked(tx: &mut Conn, incident_id: i64) -> Result<Vec<LinkedRow>, sqlx::Error> {
    on_conn!(tx, |c| sqlx::query_as(
        "SELECT io.operation_id, o.process_id, io.event, io.failure_class, io.linked_at
         FROM incident_operations io JOIN operations o ON o.id = io.operation_id
         WHERE io.incident_id = $1 ORDER BY io.linked_at, o.process_id"
    )
    .bind(incident_id)
    .fetch_all(c)
    .await)
}

pub async fn insert_action(
    tx: &mut Conn,
    incident_id: i64,
    description: &str,
    owner_id: i64,
    due_on: NaiveDate,
    now: DateTime<Utc>,
) -> Result<i64, sqlx::Error> {
    on_conn!(tx, |c| sqlx::query_scalar(
        "INSERT INTO prevention_actions (incident_id, description, owner_id, due_on, status, created_at, updated_at)
         VALUES ($1, $2, $3, $4, 'open', $5, $5) RETURNING id"
    )
    .bind(incident_id)
    .bind(description)
    .bind(owner_id)
    .bind(due_on)
    .bind(now)
    .fetch_one(c)
    .await)
}

pub async fn actions(tx: &mut Conn, incident_id: i64) -> Result<Vec<ActionRow>, sqlx::Error> {
    let sql = format!("{ACTION_SELECT} WHERE a.incident_id = $1 ORDER BY a.due_on, a.id");
    on_conn!(tx, |c| sqlx::query_as(&sql).bind(incident_id).fetch_all(c).await)
}

pub async fn action(tx: &mut Conn, incident_id: i64, action_id: i64) -> Result<Option<ActionRow>, sqlx::Error> {
    let sql = format!("{ACTION_SELECT} WHERE a.incident_id = $1 AND a.id = $2");
    on_conn!(tx, |c| sqlx::query_as(&sql).bind(incident_id).bind(action_id).fetch_optional(c).await)
}

/// Moves an action from one status to another (compare-and-set); `done_at` is set exactly while it is done.
pub async fn set_action_status(
    tx: &mut Conn,
    action_id: i64,
    from: &str,
    to: &str,
    now: DateTime<Utc>,
) -> Result<bool, sqlx::Error> {
    let done_at = (to == "done").then_some(now);
    changed_one!(tx, |c| sqlx::query(
        "UPDATE prevention_actions SET status = $3, done_at = $4, updated_at = $5 WHERE id = $1 AND status = $2"
    )
    .bind(action_id)
    .bind(from)
    .bind(to)
    .bind(done_at)
    .bind(now)
    .execute(c)
    .await)
}

/// The incidents of these departments (`None`: all), newest first, with their open and overdue actions;
/// `before`: only those after that incident in this order (keyset paging: a report filed meanwhile shifts
/// nothing).
pub async fn list(
    tx: &mut Conn,
    departments: Option<&[String]>,
    today: NaiveDate,
    before: Option<i64>,
    limit: i64,
) -> Result<Vec<SummaryRow>, sqlx::Error> {
    let filter = match departments {
        Some([]) => return Ok(Vec::new()),
        Some(list) => format!("AND i.department IN ({})", super::params(3, list.len())),
        None => String::new(),
    };
    let sql = format!(
        "SELECT i.id, i.department, i.title, i.occurred_at,
             (SELECT COUNT(*) FROM prevention_actions a WHERE a.incident_id = i.id AND a.status = 'open')
                 AS open_actions,
             (SELECT COUNT(*) FROM prevention_actions a
                 WHERE a.incident_id = i.id AND a.status = 'open' AND a.due_on < $1)
                 AS overdue_actions
         FROM incidents i
         WHERE ($3 IS NULL OR (i.occurred_at, i.id) < (SELECT c.occurred_at, c.id FROM incidents c WHERE c.id = $3))
             {filter}
         ORDER BY i.occurred_at DESC, i.id DESC LIMIT $2"
    );
    on_conn!(tx, |c| {
        let mut query = sqlx::query_as(&sql).bind(today).bind(limit).bind(before);
        for department in departments.unwrap_or_default() {
            query = query.bind(department);
        }
        query.fetch_all(c).await
    })
}

/// Open actions due before `today` in these departments (`None`: all), the most overdue first.
pub async fn overdue(
    tx: &mut Conn,
    departments: Option<&[String]>,
    today: NaiveDate,
    limit: i64,
) -> Result<Vec<OverdueRow>, sqlx::Error> {
    let filter = match departments {
        Some([]) => return Ok(Vec::new()),
        Some(list) => format!("AND i.department IN ({})", super::params(2, list.len())),
        None => String::new(),
    };
    let sql = format!(
        "SELECT i.id AS incident_id, i.title, i.department, a.id AS action_id, a.description,
             u.display_name AS owner, a.due_on
         FROM prevention_actions a JOIN incidents i ON i.id = a.incident_id JOIN users u ON u.id = a.owner_id
         WHERE a.status = 'open' AND a.due_on < $1 {filter} ORDER BY a.due_on, a.id LIMIT $2"
    );
    on_conn!(tx, |c| {
        let mut query = sqlx::query_as(&sql).bind(today).bind(limit);
        for department in departments.unwrap_or_default() {
            query = query.bind(department);
        }
        query.fetch_all(c).await
    })
}

/// The enabled users of a department: who may own an action, by display name.
pub async fn department_people(tx: &mut Conn, department: &str) -> Result<Vec<(i64, String)>, sqlx::Error> {
    on_conn!(tx, |c| sqlx::query_as(
        "SELECT DISTINCT u.id, u.display_name FROM users u
         JOIN user_memberships m ON m.user_id = u.id JOIN departments d ON d.id = m.department_id
         WHERE d.code = $1 AND u.disabled_at IS NULL ORDER BY u.display_name, u.id"
    )
    .bind(department)
    .fetch_all(c)
    .await)
}

/// Past incidents of the department that link an operation with this event and failure class, except those
/// that already link this operation; with this operation's acknowledgement of each, if any.
pub async fn known_patterns(
    tx: &mut Conn,
    department: &str,
    event: &str,
    failure_class: &str,
    operation_id: i64,
) -> Result<Vec<PatternRow>, sqlx::Error> {
    on_conn!(tx, |c| sqlx::query_as(
        "SELECT i.id AS incident_id, i.title, i.occurred_at, i.response, pa.evidence AS acknowledged_evidence,
             u.display_name AS acknowledged_by, pa.acknowledged_at
         FROM incidents i
         LEFT JOIN pattern_acknowledgements pa ON pa.incident_id = i.id AND pa.operation_id = $4
         LEFT JOIN users u ON u.id = pa.acknowledged_by
         WHERE i.department = $1
           AND EXISTS (SELECT 1 FROM incident_operations io
                       WHERE io.incident_id = i.id AND io.event = $2 AND io.failure_class = $3)
           AND NOT EXISTS (SELECT 1 FROM incident_operations io WHERE io.incident_id = i.id AND io.operation_id = $4)
         ORDER BY i.occurred_at DESC, i.id DESC LIMIT 20"
    )
    .bind(department)
    .bind(event)
    .bind(failure_class)
    .bind(operation_id)
    .fetch_all(c)
    .await)
}

/// Records that the pattern is understood for this operation; `false` when it already was.
pub async fn acknowledge(
    tx: &mut Conn,
    operation_id: i64,
    incident_id: i64,
    evidence: &str,
    user_id: i64,
    now: DateTime<Utc>,
) -> Result<bool, sqlx::Error> {
    changed_one!(tx, |c| {
        sqlx::query(
        "INSERT INTO pattern_acknowledgements (operation_id, incident_id, evidence, acknowledged_by, acknowledged_at)
         VALUES ($1, $2, $3, $4, $5) ON CONFLICT (operation_id, incident_id) DO NOTHING"
    )
    .bind(operation_id)
    .bind(incident_id)
    .bind(evidence)
    .bind(user_id)
    .bind(now)
    .execute(c)
    .await
    })
}
