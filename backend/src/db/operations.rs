//! Operations and their steps.
use super::states::Stored;
use super::{Conn, RowLock, changed_one, on_conn};
use chrono::{DateTime, Utc};
use domain::operations::{OperationEvent, OperationStatus, StepState};
use domain::reconciliation::Verdict;
use domain::steps::Step;

#[derive(Clone, Debug, sqlx::FromRow, serde::Serialize)]
pub struct OperationRow {
    pub id: i64,
    pub process_id: String,
    pub workflow: String,
    pub workflow_version: String,
    pub department: String,
    pub business_key: Option<String>,
    pub content_json: Option<String>,
    pub content_fingerprint: Option<String>,
    #[sqlx(try_from = "Stored<OperationStatus>")]
    pub status: OperationStatus,
    pub event: Option<String>,
    pub failure_class: Option<String>,
    pub possible_duplicate_of: Option<String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    /// The drill it was created in: a practice operation, never counted in the real indicators.
    pub drill_id: Option<String>,
}

const OPERATION_COLUMNS: &str = "id, process_id, workflow, workflow_version, department, business_key, content_json,
    content_fingerprint, status, event, failure_class, possible_duplicate_of, created_at, updated_at, drill_id";

/// A step as stored: read into the domain's `Step`.
#[derive(sqlx::FromRow)]
struct StepRow {
    id: i64,
    operation_id: i64,
    position: i64,
    name: String,
    idempotency_key: String,
    content_fingerprint: Option<String>,
    #[sqlx(try_from = "Stored<StepState>")]
    state: StepState,
    last_seq: Option<i64>,
    result_id: Option<String>,
    error_class: Option<String>,
    error_message: Option<String>,
    attempts: i64,
    started_at: Option<DateTime<Utc>>,
    last_heartbeat_at: Option<DateTime<Utc>>,
    completed_at: Option<DateTime<Utc>>,
    updated_at: DateTime<Utc>,
    content_json: Option<String>,
    #[sqlx(try_from = "Stored<Option<Verdict>>")]
    latest_verdict: Option<Verdict>,
    revision: i64,
}

impl From<StepRow> for Step {
    fn from(r: StepRow) -> Step {
        Step {
            id: r.id,
            operation_id: r.operation_id,
            position: r.position,
            name: r.name,
            idempotency_key: r.idempotency_key,
            content_fingerprint: r.content_fingerprint,
            state: r.state,
            last_seq: r.last_seq,
            result_id: r.result_id,
            error_class: r.error_class,
            error_message: r.error_message,
            attempts: r.attempts,
            started_at: r.started_at,
            last_heartbeat_at: r.last_heartbeat_at,
            completed_at: r.completed_at,
            updated_at: r.updated_at,
            content_json: r.content_json,
            latest_verdict: r.latest_verdict,
            revision: r.revision,
        }
    }
}

const STEP_COLUMNS: &str = "id, operation_id, position, name, idempotency_key, content_fingerprint, state, last_seq,
    result_id, error_class, error_message, attempts, started_at, last_heartbeat_at, completed_at, updated_at,
    content_json, latest_verdict, revision";

/// A step with what a step event needs of its operation, read in one statement (the hot path).
#[derive(Clone, Debug)]
pub struct StepInOperation {
    pub step: Step,
    pub process_id: String,
    pub workflow: String,
    pub department: String,
}

#[derive(sqlx::FromRow)]
struct StepInOperationRow {
    #[sqlx(flatten)]
    step: StepRow,
    process_id: String,
    workflow: String,
    department: String,
}

/// The step of an operation, with the operation's facts; `None` when either does not exist.
pub async fn step_in_operation(
    tx: &mut Conn,
    process_id: &str,
    step: &str,
) -> Result<Option<StepInOperation>, sqlx::Error> {
    let sql = STEP_IN_OPERATION_SQL.as_str();
    let row: Option<StepInOperationRow> =
        on_conn!(tx, |c| sqlx::query_as(sql).bind(process_id).bind(step).fetch_optional(c).await)?;
    Ok(row.map(|r| StepInOperation {
        step: r.step.into(),
        process_id: r.process_id,
        workflow: r.workflow,
        department: r.department,
    }))
}

pub(super) static STEP_IN_OPERATION_SQL: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    let step_columns: Vec<String> = STEP_COLUMNS.split(',').map(|c| format!("s.{}", c.trim())).collect();
    format!(
        "SELECT {}, o.process_id, o.workflow, o.department
         FROM operations o JOIN steps s ON s.operation_id = o.id WHERE o.process_id = $1 AND s.name = $2",
        step_columns.join(", ")
    )
});

pub async fn by_id(tx: &mut Conn, id: i64) -> Result<Option<OperationRow>, sqlx::Error> {
    let sql = format!("SELECT {OPERATION_COLUMNS} FROM operations WHERE id = $1");
    on_conn!(tx, |c| sqlx::query_as(&sql).bind(id).fetch_optional(c).await)
}

pub async fn by_process_id(tx: &mut Conn, process_id: &str) -> Result<Option<OperationRow>, sqlx::Error> {
    let sql = format!("SELECT {OPERATION_COLUMNS} FROM operations WHERE process_id = $1");
    on_conn!(tx, |c| sqlx::query_as(&sql).bind(process_id).fetch_optional(c).await)
}

/// The steps holding this idempotency key, as (workflow, step).
pub async fn holders_of_key(tx: &mut Conn, key: &str) -> Result<Vec<(String, String)>, sqlx::Error> {
    on_conn!(tx, |c| sqlx::query_as(
        "SELECT o.workflow, s.name FROM steps s JOIN operations o ON o.id = s.operation_id
         WHERE s.idempotency_key = $1"
    )
    .bind(key)
    .fetch_all(c)
    .await)
}

/// Every step whose idempotency key another step holds too, as (key, workflow, step).
pub async fn shared_keys(tx: &mut Conn) -> Result<Vec<(String, String, String)>, sqlx::Error> {
    on_conn!(tx, |c| sqlx::query_as(
        "SELECT s.idempotency_key, o.workflow, s.name FROM steps s JOIN operations o ON o.id = s.operation_id
         WHERE s.idempotency_key IN (SELECT idempotency_key FROM steps GROUP BY idempotency_key HAVING COUNT(*) > 1)
         ORDER BY s.idempotency_key"
    )
    .fetch_all(c)
    .await)
}

/// The department's oldest other operation with the business key, with these placeholders; also what a
/// registration's one-trip write checks still holds.
pub(super) fn duplicate_sql(department: &str, business_key: &str, process_id: &str) -> String {
    format!(
        "SELECT process_id FROM operations WHERE department = {department} AND business_key = {business_key}
         AND process_id <> {process_id} ORDER BY id LIMIT 1"
    )
}

/// Another operation of the department with the same business key (oldest first), if any.
pub async fn other_with_business_key(
    tx: &mut Conn,
    department: &str,
    business_key: &str,
    process_id: &str,
) -> Result<Option<String>, sqlx::Error> {
    let sql = duplicate_sql("$1", "$2", "$3");
    on_conn!(tx, |c| sqlx::query_scalar(&sql)
        .bind(department)
        .bind(business_key)
        .bind(process_id)
        .fetch_optional(c)
        .await)
}

pub async fn steps(tx: &mut Conn, operation_id: i64) -> Result<Vec<Step>, sqlx::Error> {
    let sql = format!("SELECT {STEP_COLUMNS} FROM steps WHERE operation_id = $1 ORDER BY position");
    let rows: Vec<StepRow> = on_conn!(tx, |c| sqlx::query_as(&sql).bind(operation_id).fetch_all(c).await)?;
    Ok(rows.into_iter().map(Step::from).collect())
}

pub async fn step_by_name(tx: &mut Conn, operation_id: i64, name: &str) -> Result<Option<Step>, sqlx::Error> {
    let sql = format!("SELECT {STEP_COLUMNS} FROM steps WHERE operation_id = $1 AND name = $2");
    let row: Option<StepRow> =
        on_conn!(tx, |c| sqlx::query_as(&sql).bind(operation_id).bind(name).fetch_optional(c).await)?;
    Ok(row.map(Step::from))
}

/// The step, read inside a write transaction and locked against other writers until it ends (PostgreSQL:
/// `FOR UPDATE`; SQLite: the write transaction already excludes every other writer).
pub async fn step_for_update(tx: &mut Conn, id: i64) -> Result<Step, sqlx::Error> {
    let sql = format!("SELECT {STEP_COLUMNS} FROM steps WHERE id = $1{}", tx.lock_clause(RowLock::Every));
    let row: StepRow = on_conn!(tx, |c| sqlx::query_as(&sql).bind(id).fetch_one(c).await)?;
    Ok(row.into())
}

/// The operation's status and how many of its steps are not complete, in one read of the caller's transaction.
pub async fn status_and_incomplete_steps(
    tx: &mut Conn,
    id: i64,
) -> Result<Option<(OperationStatus, i64)>, sqlx::Error> {
    let row: Option<(Stored<OperationStatus>, i64)> = on_conn!(tx, |c| sqlx::query_as(
        "SELECT o.status, (SELECT COUNT(*) FROM steps s WHERE s.operation_id = o.id AND s.completed_at IS NULL)
         FROM operations o WHERE o.id = $1"
    )
    .bind(id)
    .fetch_optional(c)
    .await)?;
    Ok(row.map(|(status, incomplete)| (status.0, incomplete)))
}

/// Writes a step's new state if the row is still at the revision it was decided on, `step.revision`
/// (compare-and-set; the row's revision then moves on); `false` when anything changed it since and the caller
/// must decide again.
pub async fn update_step_if_unchanged(tx: &mut Conn, step: &Step) -> Result<bool, sqlx::Error> {
    changed_one!(tx, |c| bind_step_update!(sqlx::query(STEP_UPDATE_SQL.as_str()), step).execute(c).await)
}

/// How many parameters the compare-and-set of a step takes.
pub(super) const STEP_UPDATE_PARAMS: usize = 12;

/// The compare-and-set of a step (`STEP_UPDATE_PARAMS`), shared with the one-trip write of `db::sqlite`.
pub(super) static STEP_UPDATE_SQL: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| step_update_sql(0));

/// The compare-and-set on the row's revision, with its 12 parameters numbered after `n` others
/// (`$n+1 … $n+12`), so that several can share one statement batch.
pub(super) fn step_update_sql(n: usize) -> String {
    let p = |i: usize| format!("${}", n + i);
    format!(
        "UPDATE steps SET state = {}, last_seq = {}, result_id = {}, error_class = {}, error_message = {},
             attempts = {}, started_at = {}, last_heartbeat_at = {}, completed_at = {}, updated_at = {},
             revision = revision + 1
         WHERE id = {} AND revision = {}",
        p(2),
        p(3),
        p(4),
        p(5),
        p(6),
        p(7),
        p(8),
        p(9),
        p(10),
        p(11),
        p(1),
        p(12)
    )
}

macro_rules! bind_step_update {
    ($query:expr, $step:expr) => {
        $query
            .bind($step.id)
            .bind($crate::db::states::Stored($step.state))
            .bind($step.last_seq)
            .bind(&$step.result_id)
            .bind(&$step.error_class)
            .bind(&$step.error_message)
            .bind($step.attempts)
            .bind($step.started_at)
            .bind($step.last_heartbeat_at)
            .bind($step.completed_at)
            .bind($step.updated_at)
            .bind($step.revision)
    };
}
pub(super) use bind_step_update;

/// Moves the status from `from` to `to`; `false` when it was not `from` any more (someone else was first).
pub async fn set_status_from(
    tx: &mut Conn,
    id: i64,
    from: OperationStatus,
    to: OperationStatus,
    now: DateTime<Utc>,
) -> Result<bool, sqlx::Error> {
    changed_one!(tx, |c| sqlx::query(
        "UPDATE operations SET status = $3, updated_at = $4 WHERE id = $1 AND status = $2"
    )
    .bind(id)
    .bind(Stored(from))
    .bind(Stored(to))
    .bind(now)
    .execute(c)
    .await)
}

/// Running (and rerunning) operations in id order after `after_id`, for the sweeper.
pub async fn running_after(tx: &mut Conn, after_id: i64, limit: i64) -> Result<Vec<OperationRow>, sqlx::Error> {
    let sql = format!(
        "SELECT {OPERATION_COLUMNS} FROM operations
         WHERE status IN ('running', 'rerunning') AND id > $1 ORDER BY id LIMIT $2"
    );
    on_conn!(tx, |c| sqlx::query_as(&sql).bind(after_id).bind(limit).fetch_all(c).await)
}

/// Marks a running (or rerunning: `OperationEvent::RerunStalled`) operation stalled; `false` when it moved
/// meanwhile (another instance was first, or a step event just changed it), so exactly one audit event is written.
pub async fn mark_stalled(
    tx: &mut Conn,
    id: i64,
    stall: OperationEvent,
    (event, failure_class): (&str, &str),
    now: DateTime<Utc>,
) -> Result<bool, sqlx::Error> {
    let (from, to) = stall.moves();
    changed_one!(tx, |c| {
        sqlx::query(
            "UPDATE operations SET status = $6, event = $2, failure_class = $3, updated_at = $4
         WHERE id = $1 AND status = $5",
        )
        .bind(id)
        .bind(event)
        .bind(failure_class)
        .bind(now)
        .bind(Stored(from))
        .bind(Stored(to))
        .execute(c)
        .await
    })
}

/// Filters of the stalled-operations board. `departments: None` means every department.
pub struct BoardQuery<'a> {
    pub departments: Option<&'a [String]>,
    pub workflow: Option<&'a str>,
    pub event: Option<&'a str>,
    pub created_before: Option<DateTime<Utc>>,
    pub after_id: i64,
    pub limit: i64,
}

enum Bind {
    Text(String),
    Time(DateTime<Utc>),
    Int(i64),
}

/// `WHERE` conditions with numbered placeholders, shared by the board's page and its counts.
fn board_conditions(q: &BoardQuery<'_>, with_event: bool) -> (String, Vec<Bind>) {
    // The board shows what needs people: stalled operations and those on hold.
    let mut conditions = vec!["status IN ('stalled', 'on_hold')".to_string()];
    let mut binds = Vec::new();
    let next = |bind: Bind, binds: &mut Vec<Bind>| {
        binds.push(bind);
        format!("${}", binds.len())
    };
    if let Some(departments) = q.departments {
        if departments.is_empty() {
            conditions.push("1 = 0".into());
        } else {
            let list: Vec<String> = departments.iter().map(|d| next(Bind::Text(d.clone()), &mut binds)).collect();
            conditions.push(format!("department IN ({})", list.join(", ")));
        }
    }
    if let Some(workflow) = q.workflow {
        let p = next(Bind::Text(workflow.into()), &mut binds);
        conditions.push(format!("workflow = {p}"));
    }
    if let (true, Some(event)) = (with_event, q.event) {
        let p = next(Bind::Text(event.into()), &mut binds);
        conditions.push(format!("event = {p}"));
    }
    if let Some(before) = q.created_before {
        let p = next(Bind::Time(before), &mut binds);
        conditions.push(format!("created_at <= {p}"));
    }
    (conditions.join(" AND "), binds)
}

macro_rules! bind_all {
    ($query:expr, $binds:expr) => {{
        let mut query = $query;
        for bind in $binds {
            query = match bind {
                Bind::Text(v) => query.bind(v),
                Bind::Time(v) => query.bind(v),
                Bind::Int(v) => query.bind(v),
            };
        }
        query
    }};
}

/// One page of stalled operations, oldest first, after `after_id` (keyset pagination).
pub async fn stalled_page(tx: &mut Conn, q: &BoardQuery<'_>) -> Result<Vec<OperationRow>, sqlx::Error> {
    let (conditions, mut binds) = board_conditions(q, true);
    binds.push(Bind::Int(q.after_id));
    let after = binds.len();
    binds.push(Bind::Int(q.limit));
    let limit = binds.len();
    let sql = format!(
        "SELECT {OPERATION_COLUMNS} FROM operations WHERE {conditions} AND id > ${after} ORDER BY id LIMIT ${limit}"
    );
    on_conn!(tx, |c| bind_all!(sqlx::query_as(&sql), binds).fetch_all(c).await)
}

/// How many stalled operations per event, under the same filters except the event: from the counts the
/// triggers keep (migration 0027) and the changes not folded in yet, or, for a board as it was at a time, by
/// counting the operations.
pub async fn stalled_counts(tx: &mut Conn, q: &BoardQuery<'_>) -> Result<Vec<(Option<String>, i64)>, sqlx::Error> {
    let (conditions, binds) = board_conditions(q, false);
    let sql = match q.created_before {
        Some(_) => format!("SELECT event, COUNT(*) FROM operations WHERE {conditions} GROUP BY event ORDER BY event"),
        None => format!(
            "SELECT NULLIF(event, ''), CAST(SUM(n) AS BIGINT) FROM
               (SELECT status, department, workflow, event, n FROM board_counts
                UNION ALL SELECT status, department, workflow, event, n FROM board_count_changes) AS kept
             WHERE {conditions} GROUP BY event HAVING SUM(n) <> 0 ORDER BY NULLIF(event, '')"
        ),
    };
    on_conn!(tx, |c| bind_all!(sqlx::query_as(&sql), binds).fetch_all(c).await)
}
