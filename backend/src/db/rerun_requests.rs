//! Rerun requests and their checklist items.
use super::states::Stored;
use super::{Conn, RowLock, changed_one, on_conn};
use chrono::{DateTime, Utc};
use domain::approval::Decision;
use domain::rerun_request::RerunRequestStatus;

#[derive(Clone, Debug, sqlx::FromRow, serde::Serialize)]
pub struct RequestRow {
    pub id: String,
    pub operation_id: i64,
    pub process_id: String,
    pub department: String,
    pub workflow: String,
    pub requested_by: i64,
    pub requester: String,
    pub reason: String,
    #[sqlx(try_from = "Stored<RerunRequestStatus>")]
    pub status: RerunRequestStatus,
    pub plan_json: String,
    pub workflow_version: String,
    pub verdicts_hash: String,
    pub created_at: DateTime<Utc>,
    pub submitted_at: Option<DateTime<Utc>>,
    pub decided_at: Option<DateTime<Utc>>,
    pub expires_at: Option<DateTime<Utc>>,
    /// The bulk rerun this request is part of, if any.
    pub batch_id: Option<String>,
}

// Macros rather than constants: `concat!` can then add a column to the same select (`decided_by`).
macro_rules! request_columns {
    () => {
        "r.id, r.operation_id, o.process_id, o.department, o.workflow, r.requested_by,
        u.display_name AS requester, r.reason, r.status, r.plan_json, r.workflow_version, r.verdicts_hash,
        r.created_at, r.submitted_at, r.decided_at, r.expires_at, r.batch_id"
    };
}
macro_rules! request_from {
    () => {
        "FROM rerun_requests r JOIN operations o ON o.id = r.operation_id JOIN users u ON u.id = r.requested_by"
    };
}
const REQUEST_SELECT: &str = concat!("SELECT ", request_columns!(), " ", request_from!());

pub struct NewRequest<'a> {
    pub id: &'a str,
    pub operation_id: i64,
    pub requested_by: i64,
    pub reason: &'a str,
    pub plan_json: &'a str,
    pub workflow_version: &'a str,
    pub verdicts_hash: &'a str,
    pub batch_id: Option<&'a str>,
}

/// `false` when the operation already has an open request (the unique index decides, under concurrency too).
pub async fn insert(tx: &mut Conn, r: &NewRequest<'_>, now: DateTime<Utc>) -> Result<bool, sqlx::Error> {
    changed_one!(tx, |c| sqlx::query(
        "INSERT INTO rerun_requests (id, operation_id, requested_by, reason, status, plan_json, workflow_version,
             verdicts_hash, created_at, updated_at, batch_id)
         VALUES ($1, $2, $3, $4, 'draft', $5, $6, $7, $8, $8, $9) ON CONFLICT DO NOTHING"
    )
    .bind(r.id)
    .bind(r.operation_id)
    .bind(r.requested_by)
    .bind(r.reason)
    .bind(r.plan_json)
    .bind(r.workflow_version)
    .bind(r.verdicts_hash)
    .bind(now)
    .bind(r.batch_id)
    .execute(c)
    .await)
}

pub async fn by_id(tx: &mut Conn, id: &str) -> Result<Option<RequestRow>, sqlx::Error> {
    let sql = format!("{REQUEST_SELECT} WHERE r.id = $1");
    on_conn!(tx, |c| sqlx::query_as(&sql).bind(id).fetch_optional(c).await)
}

/// The operation's open request (`RerunRequestStatus::is_open`), if any.
pub async fn open_for_operation(tx: &mut Conn, operation_id: i64) -> Result<Option<RequestRow>, sqlx::Error> {
    // The domain's names, written into the statement: fixed words, never input.
    let open: Vec<String> =
        RerunRequestStatus::ALL.iter().filter(|s| s.is_open()).map(|s| format!("'{}'", s.as_str())).collect();
    let sql = format!("{REQUEST_SELECT} WHERE r.operation_id = $1 AND r.status IN ({})", open.join(", "));
    on_conn!(tx, |c| sqlx::query_as(&sql).bind(operation_id).fetch_optional(c).await)
}

/// Every request ever made for the operation, oldest first (the evidence bundle).
pub async fn all_for_operation(tx: &mut Conn, operation_id: i64) -> Result<Vec<RequestRow>, sqlx::Error> {
    let sql = format!("{REQUEST_SELECT} WHERE r.operation_id = $1 ORDER BY r.created_at, r.id");
    on_conn!(tx, |c| sqlx::query_as(&sql).bind(operation_id).fetch_all(c).await)
}

/// Moves the request from one status to another (the services ask the domain's table which); `false` when it
/// was not in `from` any more. A submission and a decision stamp their time.
pub async fn set_status(
    tx: &mut Conn,
    id: &str,
    from: RerunRequestStatus,
    to: RerunRequestStatus,
    now: DateTime<Utc>,
) -> Result<bool, sqlx::Error> {
    let submitted = to.is_submission().then_some(now);
    let decided = to.is_decision().then_some(now);
    changed_one!(tx, |c| sqlx::query(
        "UPDATE rerun_requests SET status = $3, updated_at = $4,
             submitted_at = COALESCE($5, submitted_at), decided_at = COALESCE($6, decided_at)
         WHERE id = $1 AND status = $2"
    )
    .bind(id)
    .bind(Stored(from))
    .bind(Stored(to))
    .bind(now)
    .bind(submitted)
    .bind(decided)
    .execute(c)
    .await)
}

#[derive(Clone, Debug, sqlx::FromRow, serde::Serialize)]
pub struct ItemRow {
    pub number: i64,
    pub holds: bool,
    pub evidence: String,
    pub confirmed_by: Option<String>,
    pub confirmed_at: Option<DateTime<Utc>>,
    pub comment: Option<String>,
    pub cause_class: Option<String>,
    pub cause_text: Option<String>,
}

pub async fn insert_item(
    tx: &mut Conn,
    request: &str,
    number: i64,
    holds: bool,
    evidence: &str,
) -> Result<(), sqlx::Error> {
    on_conn!(tx, |c| sqlx::query(
        "INSERT INTO checklist_items (request_id, number, holds, evidence) VALUES ($1, $2, $3, $4)"
    )
    .bind(request)
    .bind(number)
    .bind(holds)
    .bind(evidence)
    .execute(c)
    .await
    .map(drop))
}

pub async fn items(tx: &mut Conn, request: &str) -> Result<Vec<ItemRow>, sqlx::Error> {
    on_conn!(tx, |c| sqlx::query_as(
        "SELECT i.number, i.holds, i.evidence, u.display_name AS confirmed_by, i.confirmed_at, i.comment,
                i.cause_class, i.cause_text
         FROM checklist_items i LEFT JOIN users u ON u.id = i.confirmed_by
         WHERE i.request_id = $1 ORDER BY i.number"
    )
    .bind(request)
    .fetch_all(c)
    .await)
}

pub struct Confirmation<'a> {
    pub user_id: i64,
    pub comment: &'a str,
    pub cause_class: Option<&'a str>,
    pub cause_text: Option<&'a str>,
}

pub async fn confirm_item(
    tx: &mut Conn,
    request: &str,
    number: i64,
    c: &Confirmation<'_>,
    now: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    on_conn!(tx, |conn| {
        sqlx::query(
            "UPDATE checklist_items
         SET confirmed_by = $3, confirmed_at = $4, comment = $5, cause_class = $6, cause_text = $7
         WHERE request_id = $1 AND number = $2",
        )
        .bind(request)
        .bind(number)
        .bind(c.user_id)
        .bind(now)
        .bind(c.comment)
        .bind(c.cause_class)
        .bind(c.cause_text)
        .execute(conn)
        .await
        .map(drop)
    })
}

/// Sets a step's completion flag on the outside system's evidence; `false` when it was set already.
pub async fn confirm_step_flag(tx: &mut Conn, step_id: i64, now: DateTime<Utc>) -> Result<bool, sqlx::Error> {
    changed_one!(tx, |c| {
        sqlx::query(
            "UPDATE steps SET state = 'succeeded', completed_at = $2, updated_at = $2, revision = revision + 1
         WHERE id = $1 AND completed_at IS NULL",
        )
        .bind(step_id)
        .bind(now)
        .execute(c)
        .await
    })
}

/// The request, locked for a decision (PostgreSQL: the row; SQLite: the write transaction already is).
pub async fn lock(tx: &mut Conn, id: &str) -> Result<Option<RequestRow>, sqlx::Error> {
    let sql = format!("{REQUEST_SELECT} WHERE r.id = $1{}", tx.lock_clause(RowLock::Of("r")));
    on_conn!(tx, |c| sqlx::query_as(&sql).bind(id).fetch_optional(c).await)
}

/// Requests waiting for approval in these departments, oldest first (a bulk rerun's are decided as a batch).
pub async fn pending_in(tx: &mut Conn, departments: &[String]) -> Result<Vec<RequestRow>, sqlx::Error> {
    if departments.is_empty() {
        return Ok(Vec::new());
    }
    let sql = format!(
        "{REQUEST_SELECT} WHERE r.status = $1 AND r.batch_id IS NULL AND o.department IN ({})
         ORDER BY r.submitted_at, r.id",
        super::params(1, departments.len())
    );
    on_conn!(tx, |c| {
        let mut query = sqlx::query_as(&sql).bind(Stored(RerunRequestStatus::PendingApproval));
        for d in departments {
            query = query.bind(d);
        }
        query.fetch_all(c).await
    })
}

/// The requests (not a bulk rerun's members) this person took part in preparing, newest first.
pub async fn made_by(tx: &mut Conn, user_id: i64, limit: i64) -> Result<Vec<RequestRow>, sqlx::Error> {
    let sql = format!(
        "{REQUEST_SELECT} WHERE r.batch_id IS NULL
           AND r.id IN (SELECT m.request_id FROM rerun_request_makers m WHERE m.user_id = $1)
         ORDER BY r.created_at DESC, r.id DESC LIMIT $2"
    );
    on_conn!(tx, |c| sqlx::query_as(&sql).bind(user_id).bind(limit).fetch_all(c).await)
}

/// The requests (not a bulk rerun's members) this person decided on, newest decision first, with the decision.
pub async fn decided_by(tx: &mut Conn, user_id: i64, limit: i64) -> Result<Vec<(RequestRow, Decision)>, sqlx::Error> {
    let sql = concat!(
        "SELECT ",
        request_columns!(),
        ", a.decision ",
        request_from!(),
        " JOIN approvals a ON a.request_id = r.id
         WHERE r.batch_id IS NULL AND a.approver_id = $1 ORDER BY a.decided_at DESC, r.id DESC LIMIT $2"
    );
    let rows: Vec<Decided> = on_conn!(tx, |c| sqlx::query_as(sql).bind(user_id).bind(limit).fetch_all(c).await)?;
    Ok(rows.into_iter().map(|d| (d.request, d.decision)).collect())
}

#[derive(sqlx::FromRow)]
struct Decided {
    #[sqlx(flatten)]
    request: RequestRow,
    #[sqlx(try_from = "Stored<Decision>")]
    decision: Decision,
}

pub async fn set_expiry(tx: &mut Conn, id: &str, expires_at: DateTime<Utc>) -> Result<(), sqlx::Error> {
    on_conn!(tx, |c| sqlx::query("UPDATE rerun_requests SET expires_at = $2 WHERE id = $1")
        .bind(id)
        .bind(expires_at)
        .execute(c)
        .await
        .map(drop))
}

/// When the operation's rerun was sent (its request moved to `dispatched`), while it is out.
pub async fn sent_at(tx: &mut Conn, operation_id: i64) -> Result<Option<DateTime<Utc>>, sqlx::Error> {
    on_conn!(tx, |c| sqlx::query_scalar(
        "SELECT updated_at FROM rerun_requests WHERE operation_id = $1 AND status = 'dispatched'"
    )
    .bind(operation_id)
    .fetch_optional(c)
    .await)
}

/// A draft's plan bound anew to the facts as they are after a person's confirmation (only while a draft).
pub async fn rebind_draft(tx: &mut Conn, id: &str, plan_json: &str, verdicts_hash: &str) -> Result<bool, sqlx::Error> {
    changed_one!(tx, |c| {
        sqlx::query("UPDATE rerun_requests SET plan_json = $2, verdicts_hash = $3 WHERE id = $1 AND status = 'draft'")
            .bind(id)
            .bind(plan_json)
            .bind(verdicts_hash)
            .execute(c)
            .await
    })
}

pub async fn expires_at(tx: &mut Conn, id: &str) -> Result<Option<DateTime<Utc>>, sqlx::Error> {
    on_conn!(tx, |c| sqlx::query_scalar("SELECT expires_at FROM rerun_requests WHERE id = $1")
        .bind(id)
        .fetch_one(c)
        .await)
}

/// Records one owner's decision; `false` when this owner decided on this request already.
pub async fn insert_decision(
    tx: &mut Conn,
    id: &str,
    approver: i64,
    decision: Decision,
    comment: Option<&str>,
    now: DateTime<Utc>,
) -> Result<bool, sqlx::Error> {
    changed_one!(tx, |c| sqlx::query(
        "INSERT INTO approvals (request_id, approver_id, decision, comment, decided_at) VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT (request_id, approver_id) DO NOTHING"
    )
    .bind(id)
    .bind(approver)
    .bind(Stored(decision))
    .bind(comment)
    .bind(now)
    .execute(c)
    .await)
}

#[derive(Clone, Debug, sqlx::FromRow, serde::Serialize)]
pub struct DecisionRow {
    pub approver_id: i64,
    pub approver: String,
    #[sqlx(try_from = "Stored<Decision>")]
    pub decision: Decision,
    pub comment: Option<String>,
    pub decided_at: DateTime<Utc>,
    /// Why the approval no longer counts (its giver can no longer decide here), once it stopped counting.
    pub voided_why: Option<String>,
}

impl DecisionRow {
    pub fn counts(&self) -> bool {
        self.voided_why.is_none()
    }
}

pub async fn decisions(tx: &mut Conn, id: &str) -> Result<Vec<DecisionRow>, sqlx::Error> {
    on_conn!(tx, |c| sqlx::query_as(
        "SELECT a.approver_id, u.display_name AS approver, a.decision, a.comment, a.decided_at, a.voided_why
         FROM approvals a JOIN users u ON u.id = a.approver_id WHERE a.request_id = $1 ORDER BY a.decided_at, a.id"
    )
    .bind(id)
    .fetch_all(c)
    .await)
}

/// The outbox row of an approved request, due at `due`; `false` when it exists already.
pub async fn insert_dispatch(
    tx: &mut Conn,
    id: &str,
    due: DateTime<Utc>,
    now: DateTime<Utc>,
) -> Result<bool, sqlx::Error> {
    changed_one!(tx, |c| sqlx::query(
        "INSERT INTO dispatches (request_id, status, next_attempt_at, created_at, updated_at)
         VALUES ($1, 'pending', $2, $3, $3) ON CONFLICT (request_id) DO NOTHING"
    )
    .bind(id)
    .bind(due)
    .bind(now)
    .execute(c)
    .await)
}

pub async fn count_dispatches(tx: &mut Conn, id: &str) -> Result<i64, sqlx::Error> {
    on_conn!(tx, |c| sqlx::query_scalar("SELECT COUNT(*) FROM dispatches WHERE request_id = $1")
        .bind(id)
        .fetch_one(c)
        .await)
}

/// Requests still waiting for approval past their validity (a bulk rerun's expire with their batch).
pub async fn overdue(tx: &mut Conn, now: DateTime<Utc>) -> Result<Vec<String>, sqlx::Error> {
    on_conn!(tx, |c| sqlx::query_scalar(
        "SELECT id FROM rerun_requests WHERE status = 'pending_approval' AND batch_id IS NULL AND expires_at < $1
         ORDER BY expires_at LIMIT 100"
    )
    .bind(now)
    .fetch_all(c)
    .await)
}

/// The approvals `user_id` gave that still count, on requests that still wait: (request ID, process ID,
/// department).
pub async fn waiting_approvals_by(tx: &mut Conn, user_id: i64) -> Result<Vec<(String, String, String)>, sqlx::Error> {
    on_conn!(tx, |c| sqlx::query_as(
        "SELECT r.id, o.process_id, o.department FROM approvals a
         JOIN rerun_requests r ON r.id = a.request_id JOIN operations o ON o.id = r.operation_id
         WHERE a.approver_id = $1 AND a.decision = 'approved' AND a.voided_at IS NULL
           AND r.status = 'pending_approval' ORDER BY r.id"
    )
    .bind(user_id)
    .fetch_all(c)
    .await)
}

/// The approval stops counting, and says why.
pub async fn void_approval(
    tx: &mut Conn,
    request: &str,
    user_id: i64,
    why: &str,
    now: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    on_conn!(tx, |c| sqlx::query(
        "UPDATE approvals SET voided_at = $3, voided_why = $4 WHERE request_id = $1 AND approver_id = $2"
    )
    .bind(request)
    .bind(user_id)
    .bind(now)
    .bind(why)
    .execute(c)
    .await
    .map(drop))
}
