//! A registration's rows: the operation and its steps (and, in SQLite's one-trip write, its idempotency record
//! stored as done). The ordinary path writes them inside one write transaction with the key's claim
//! (`db::idempotency`) and the audit event; `db::sqlite` writes all of it in one statement batch.
use super::operations::duplicate_sql;
use super::{Conn, on_conn};
use chrono::{DateTime, Utc};

/// Everything a registration writes but its audit event, owned so that it can wait for the writer in a queue.
#[derive(Clone, Debug)]
pub struct Registration {
    pub client: i64,
    pub key: String,
    pub fingerprint: String,
    pub expires_at: DateTime<Utc>,
    /// The stored answer (status 201), replayed for the same key and body.
    pub answer: String,
    pub process_id: String,
    pub workflow: String,
    pub workflow_version: String,
    pub department: String,
    pub business_key: Option<String>,
    pub content_json: Option<String>,
    pub content_fingerprint: Option<String>,
    pub possible_duplicate_of: Option<String>,
    pub drill_id: Option<String>,
    /// In the workflow's order: position 1, 2, …
    pub steps: Vec<NewStep>,
    pub at: DateTime<Utc>,
}

#[derive(Clone, Debug)]
pub struct NewStep {
    pub name: String,
    pub idempotency_key: String,
    pub content_json: Option<String>,
    pub content_fingerprint: Option<String>,
}

/// What a registration's outcome depends on (read under the audit head's lock by PostgreSQL's group commit).
#[derive(Debug, sqlx::FromRow)]
pub struct Seen {
    /// The client used this Idempotency-Key before (or is using it now).
    pub key_used: bool,
    pub process_id_used: bool,
    /// The department's oldest other operation with the same business key.
    pub duplicate_of: Option<String>,
    /// Some step holds one of the new steps' idempotency keys.
    pub step_keys_held: bool,
}

/// `Seen`, in one statement.
pub async fn seen(tx: &mut Conn, r: &Registration) -> Result<Seen, sqlx::Error> {
    let keys: Vec<String> = (0..r.steps.len()).map(|i| format!("${}", i + 6)).collect();
    let sql = format!(
        "SELECT EXISTS (SELECT 1 FROM idempotency_records WHERE api_client_id = $1 AND idempotency_key = $2)
                    AS key_used,
                EXISTS (SELECT 1 FROM operations WHERE process_id = $3) AS process_id_used,
                ({}) AS duplicate_of,
                EXISTS (SELECT 1 FROM steps WHERE idempotency_key IN ({})) AS step_keys_held",
        duplicate_sql("$4", "$5", "$3"),
        list(keys)
    );
    on_conn!(tx, |c| {
        // Planned for its own values each time (not prepared once): a plan that PostgreSQL cached while the
        // tables were nearly empty scanned them whole once they had grown (registrations 0.6 → 0.1 of the raw
        // commit rate within a minute of a fresh start).
        let mut query = sqlx::query_as(&sql)
            .persistent(false)
            .bind(r.client)
            .bind(&r.key)
            .bind(&r.process_id)
            .bind(&r.department)
            .bind(&r.business_key);
        for step in &r.steps {
            query = query.bind(&step.idempotency_key);
        }
        query.fetch_one(c).await
    })
}

/// The idempotency record with its answer, the operation and its steps, in the caller's write transaction
/// (PostgreSQL's group commit, after `seen` under the audit head's lock found them free).
pub async fn insert_answered(tx: &mut Conn, r: &Registration) -> Result<(), sqlx::Error> {
    on_conn!(tx, |c| sqlx::query(
        "INSERT INTO idempotency_records (api_client_id, idempotency_key, fingerprint, state, response_status,
             response_body, created_at, expires_at)
         VALUES ($1, $2, $3, 'done', 201, $4, $5, $6)"
    )
    .bind(r.client)
    .bind(&r.key)
    .bind(&r.fingerprint)
    .bind(&r.answer)
    .bind(r.at)
    .bind(r.expires_at)
    .execute(c)
    .await
    .map(drop))?;
    insert(tx, r).await
}

/// The operation and its steps, in the caller's transaction (the ordinary path).
pub async fn insert(tx: &mut Conn, r: &Registration) -> Result<(), sqlx::Error> {
    let operation = operation_sql(&Slots { client: 1, at: 2, operation: 3, steps: 0 });
    on_conn!(tx, |c| bind_operation!(sqlx::query(&operation).bind(r.client).bind(r.at), r).execute(c).await.map(drop))?;
    let steps = steps_sql(&Slots { client: 0, at: 2, operation: 1, steps: 3 }, r.steps.len());
    on_conn!(tx, |c| bind_steps!(sqlx::query(&steps).bind(&r.process_id).bind(r.at), r).execute(c).await.map(drop))?;
    Ok(())
}

/// Where a registration's values sit among a statement's parameters: the client, the time, the first of the
/// operation's own nine (`bind_operation!`, the process ID first) and the first of the steps' (four each).
struct Slots {
    client: usize,
    at: usize,
    operation: usize,
    steps: usize,
}

/// How many parameters a registration's rows take in SQLite's one-trip write (`registration_sql`).
pub(super) fn registration_params(steps: usize) -> usize {
    IDEMPOTENCY_PARAMS + OPERATION_PARAMS + STEP_PARAMS * steps
}
/// The idempotency record's: client, key, fingerprint, answer, time, expiry.
const IDEMPOTENCY_PARAMS: usize = 6;
const OPERATION_PARAMS: usize = 9;
const STEP_PARAMS: usize = 4;

/// The one-trip write's layout after `n` other parameters: the idempotency record's six, then the operation's.
fn one_trip(n: usize) -> Slots {
    let operation = n + IDEMPOTENCY_PARAMS + 1;
    Slots { client: n + 1, at: n + 5, operation, steps: operation + OPERATION_PARAMS }
}

/// Every row of a registration, its answer stored as done, numbered after `n` other parameters (SQLite's
/// one-trip write; bind with `bind_registration!`). The idempotency record's primary key refuses a key already
/// used and the operation's unique process ID one already registered, which stops the batch.
pub(super) fn registration_sql(n: usize, steps: usize) -> String {
    let s = one_trip(n);
    format!(
        "INSERT INTO idempotency_records (api_client_id, idempotency_key, fingerprint, state, response_status,
             response_body, created_at, expires_at)
         VALUES (${}, ${}, ${}, 'done', 201, ${}, ${}, ${});\n{};\n{}",
        n + 1,
        n + 2,
        n + 3,
        n + 4,
        n + 5,
        n + 6,
        operation_sql(&s),
        steps_sql(&s, steps)
    )
}

/// Whether what a registration was decided on still holds, as an SQL condition of `registration_sql`'s
/// parameters (its audit event's hash is NULL, refused, otherwise): the same business-key duplicate as read
/// before, and no other step holding one of its step keys.
pub(super) fn registration_holds(n: usize, steps: usize) -> String {
    let s = one_trip(n);
    let p = |i: usize| format!("${}", s.operation + i);
    let keys: Vec<String> = (0..steps).map(|i| format!("${}", s.steps + STEP_PARAMS * i + 1)).collect();
    format!(
        "({}) IS {}
         AND NOT EXISTS (SELECT 1 FROM steps WHERE idempotency_key IN ({})
             AND operation_id <> (SELECT id FROM operations WHERE process_id = {}))",
        duplicate_sql(&p(3), &p(4), &p(0)),
        p(7),
        list(keys),
        p(0)
    )
}

fn list(placeholders: Vec<String>) -> String {
    if placeholders.is_empty() { "NULL".to_string() } else { placeholders.join(", ") }
}

fn operation_sql(s: &Slots) -> String {
    let p = |i: usize| format!("${}", s.operation + i);
    format!(
        "INSERT INTO operations (process_id, workflow, workflow_version, department, business_key, content_json,
             content_fingerprint, possible_duplicate_of, drill_id, status, registered_by, created_at, updated_at)
         VALUES ({}, {}, {}, {}, {}, {}, {}, {}, {}, 'running', ${}, ${at}, ${at})",
        p(0),
        p(1),
        p(2),
        p(3),
        p(4),
        p(5),
        p(6),
        p(7),
        p(8),
        s.client,
        at = s.at
    )
}

/// The steps' rows; each finds its operation by the process ID (the operation's first value).
fn steps_sql(s: &Slots, steps: usize) -> String {
    let rows: Vec<String> = (0..steps)
        .map(|i| {
            let p = |j: usize| format!("${}", s.steps + STEP_PARAMS * i + j);
            format!(
                "((SELECT id FROM operations WHERE process_id = ${}), {}, {}, {}, {}, {}, 'not_started', ${})",
                s.operation,
                i + 1,
                p(0),
                p(1),
                p(2),
                p(3),
                s.at
            )
        })
        .collect();
    format!(
        "INSERT INTO steps (operation_id, position, name, idempotency_key, content_json, content_fingerprint, state,
             updated_at)
         VALUES {}",
        rows.join(",\n")
    )
}

/// The operation's own nine values, in `operation_sql`'s order.
macro_rules! bind_operation {
    ($query:expr, $r:expr) => {
        $query
            .bind(&$r.process_id)
            .bind(&$r.workflow)
            .bind(&$r.workflow_version)
            .bind(&$r.department)
            .bind(&$r.business_key)
            .bind(&$r.content_json)
            .bind(&$r.content_fingerprint)
            .bind(&$r.possible_duplicate_of)
            .bind(&$r.drill_id)
    };
}
pub(super) use bind_operation;

/// Each step's four values, in `steps_sql`'s order.
macro_rules! bind_steps {
    ($query:expr, $r:expr) => {{
        let mut query = $query;
        for step in &$r.steps {
            query = query
                .bind(&step.name)
                .bind(&step.idempotency_key)
                .bind(&step.content_json)
                .bind(&step.content_fingerprint);
        }
        query
    }};
}
pub(super) use bind_steps;

/// All of `registration_sql`'s values: the idempotency record's, the operation's, the steps'.
macro_rules! bind_registration {
    ($query:expr, $r:expr) => {{
        let query =
            $query.bind($r.client).bind(&$r.key).bind(&$r.fingerprint).bind(&$r.answer).bind($r.at).bind($r.expires_at);
        $crate::db::registrations::bind_steps!($crate::db::registrations::bind_operation!(query, $r), $r)
    }};
}
pub(super) use bind_registration;
