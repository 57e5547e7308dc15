//! Bulk reruns: the batch, its frozen members, its five checks and its owners' decisions.
use super::states::Stored;
use super::{Conn, RowLock, changed_one, on_conn};
use chrono::{DateTime, Utc};
use domain::approval::Decision;
use domain::batches::{BatchStatus, MemberState};
use domain::dispatch::DispatchStatus;
use domain::operations::OperationStatus;
use domain::rerun_request::RerunRequestStatus;

#[derive(Clone, Debug, sqlx::FromRow, serde::Serialize)]
pub struct BatchRow {
    pub id: String,
    pub department: String,
    pub created_by: i64,
    pub creator: String,
    pub reason: String,
    pub selection_json: String,
    #[sqlx(try_from = "Stored<BatchStatus>")]
    pub status: BatchStatus,
    pub rate_per_minute: i64,
    pub created_at: DateTime<Utc>,
    pub submitted_at: Option<DateTime<Utc>>,
    pub decided_at: Option<DateTime<Utc>>,
    pub expires_at: Option<DateTime<Utc>>,
    /// The stages it was requested with (`domain::canary::CanaryConfig`, JSON); `None`: all at once.
    pub stages_json: Option<String>,
    /// The stage being sent (0-based).
    pub stage: i64,
}

// Macros rather than constants: `concat!` can then add a column to the same select (`decided_by`).
macro_rules! batch_columns {
    () => {
        "b.id, b.department, b.created_by, u.display_name AS creator, b.reason, b.selection_json,
        b.status, b.rate_per_minute, b.created_at, b.submitted_at, b.decided_at, b.expires_at, b.stages_json, b.stage"
    };
}
macro_rules! batch_from {
    () => {
        "FROM rerun_batches b JOIN users u ON u.id = b.created_by"
    };
}
const BATCH_SELECT: &str = concat!("SELECT ", batch_columns!(), " ", batch_from!());

pub struct NewBatch<'a> {
    pub id: &'a str,
    pub department: &'a str,
    pub created_by: i64,
    pub reason: &'a str,
    pub selection_json: &'a str,
    pub rate_per_minute: i64,
}

/// A new batch (previewing) with its members in the order given.
pub async fn insert(
    tx: &mut Conn,
    b: &NewBatch<'_>,
    operation_ids: &[i64],
    now: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    on_conn!(tx, |c| sqlx::query(
        "INSERT INTO rerun_batches (id, department, created_by, reason, selection_json, status, rate_per_minute,
             created_at, updated_at)
         VALUES ($1, $2, $3, $4, $5, 'previewing', $6, $7, $7)"
    )
    .bind(b.id)
    .bind(b.department)
    .bind(b.created_by)
    .bind(b.reason)
    .bind(b.selection_json)
    .bind(b.rate_per_minute)
    .bind(now)
    .execute(c)
    .await
    .map(drop))?;
    for (position, operation_id) in operation_ids.iter().enumerate() {
        on_conn!(tx, |c| sqlx::query(
            "INSERT INTO rerun_batch_members (batch_id, position, operation_id, state) VALUES ($1, $2, $3, 'waiting')"
        )
        .bind(b.id)
        .bind(position as i64)
        .bind(operation_id)
        .execute(c)
        .await
        .map(drop))?;
    }
    Ok(())
}

pub async fn by_id(tx: &mut Conn, id: &str) -> Result<Option<BatchRow>, sqlx::Error> {
    let sql = format!("{BATCH_SELECT} WHERE b.id = $1");
    on_conn!(tx, |c| sqlx::query_as(&sql).bind(id).fetch_optional(c).await)
}

/// The batch, locked for a change (PostgreSQL: the row; SQLite: the write transaction already is).
pub async fn lock(tx: &mut Conn, id: &str) -> Result<Option<BatchRow>, sqlx::Error> {
    let sql = format!("{BATCH_SELECT} WHERE b.id = $1{}", tx.lock_clause(RowLock::Of("b")));
    on_conn!(tx, |c| sqlx::query_as(&sql).bind(id).fetch_optional(c).await)
}

/// The newest batches of these departments (`None`: every department).
pub async fn recent(tx: &mut Conn, departments: Option<&[String]>, limit: i64) -> Result<Vec<BatchRow>, sqlx::Error> {
    let filter = match departments {
        Some([]) => return Ok(Vec::new()),
        Some(list) => format!("WHERE b.department IN ({})", super::params(1, list.len())),
        None => String::new(),
    };
    let sql = format!("{BATCH_SELECT} {filter} ORDER BY b.created_at DESC, b.id DESC LIMIT $1");
    on_conn!(tx, |c| {
        let mut query = sqlx::query_as(&sql).bind(limit);
        for d in departments.unwrap_or_default() {
            query = query.bind(d);
        }
        query.fetch_all(c).await
    })
}

/// The bulk reruns waiting for approval in these departments.
pub async fn pending_in(tx: &mut Conn, departments: &[String]) -> Result<Vec<BatchRow>, sqlx::Error> {
    let all = in_status(tx, BatchStatus::PendingApproval).await?;
    Ok(all.into_iter().filter(|b| departments.contains(&b.department)).collect())
}

/// The bulk reruns this person took part in preparing, newest first.
pub async fn made_by(tx: &mut Conn, user_id: i64, limit: i64) -> Result<Vec<BatchRow>, sqlx::Error> {
    let sql = format!(
        "{BATCH_SELECT} WHERE b.id IN (SELECT m.batch_id FROM rerun_batch_makers m WHERE m.user_id = $1)
         ORDER BY b.created_at DESC, b.id DESC LIMIT $2"
    );
    on_conn!(tx, |c| sqlx::query_as(&sql).bind(user_id).bind(limit).fetch_all(c).await)
}

/// The bulk reruns this person decided on, newest decision first, with the decision.
pub async fn decided_by(tx: &mut Conn, user_id: i64, limit: i64) -> Result<Vec<(BatchRow, Decision)>, sqlx::Error> {
    let sql = concat!(
        "SELECT ",
        batch_columns!(),
        ", d.decision ",
        batch_from!(),
        " JOIN rerun_batch_decisions d ON d.batch_id = b.id
         WHERE d.approver_id = $1 ORDER BY d.decided_at DESC, b.id DESC LIMIT $2"
    );
    let rows: Vec<Decided> = on_conn!(tx, |c| sqlx::query_as(sql).bind(user_id).bind(limit).fetch_all(c).await)?;
    Ok(rows.into_iter().map(|d| (d.batch, d.decision)).collect())
}

#[derive(sqlx::FromRow)]
struct Decided {
    #[sqlx(flatten)]
    batch: BatchRow,
    #[sqlx(try_from = "Stored<Decision>")]
    decision: Decision,
}

/// The batches in one status.
pub async fn in_status(tx: &mut Conn, status: BatchStatus) -> Result<Vec<BatchRow>, sqlx::Error> {
    let sql = format!("{BATCH_SELECT} WHERE b.status = $1 ORDER BY b.created_at");
    on_conn!(tx, |c| sqlx::query_as(&sql).bind(Stored(status)).fetch_all(c).await)
}

/// Moves the batch from one status to another (the services ask the domain's table which); `false` when it was
/// not in `from` any more. A submission stamps its time, the first decision too.
pub async fn set_status(
    tx: &mut Conn,
    id: &str,
    from: BatchStatus,
    to: BatchStatus,
    now: DateTime<Utc>,
) -> Result<bool, sqlx::Error> {
    let submitted = to.is_submission().then_some(now);
    let decided = to.is_decision().then_some(now);
    changed_one!(tx, |c| sqlx::query(
        "UPDATE rerun_batches SET status = $3, updated_at = $4, lease_until = NULL,
             submitted_at = COALESCE($5, submitted_at), decided_at = COALESCE(decided_at, $6)
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

pub async fn set_rate_and_expiry(
    tx: &mut Conn,
    id: &str,
    rate_per_minute: Option<i64>,
    expires_at: Option<DateTime<Utc>>,
) -> Result<(), sqlx::Error> {
    on_conn!(tx, |c| {
        sqlx::query(
        "UPDATE rerun_batches SET rate_per_minute = COALESCE($2, rate_per_minute), expires_at = COALESCE($3, expires_at)
         WHERE id = $1"
    )
    .bind(id)
    .bind(rate_per_minute)
    .bind(expires_at)
    .execute(c)
    .await
    .map(drop)
    })
}

/// The stages the batch is requested with (JSON; `None`: all at once).
pub async fn set_stages(tx: &mut Conn, id: &str, stages_json: Option<&str>) -> Result<(), sqlx::Error> {
    on_conn!(tx, |c| sqlx::query("UPDATE rerun_batches SET stages_json = $2 WHERE id = $1")
        .bind(id)
        .bind(stages_json)
        .execute(c)
        .await
        .map(drop))
}

/// The stage the batch sends now.
pub async fn set_stage(tx: &mut Conn, id: &str, stage: i64) -> Result<(), sqlx::Error> {
    on_conn!(tx, |c| sqlx::query("UPDATE rerun_batches SET stage = $2 WHERE id = $1")
        .bind(id)
        .bind(stage)
        .execute(c)
        .await
        .map(drop))
}

/// The batch's last stage (`None`: not approved in stages).
pub async fn last_stage(tx: &mut Conn, batch: &str) -> Result<Option<i64>, sqlx::Error> {
    on_conn!(tx, |c| sqlx::query_scalar("SELECT MAX(stage) FROM rerun_batch_members WHERE batch_id = $1")
        .bind(batch)
        .fetch_one(c)
        .await)
}

/// The stage a member is sent in, set when the batch is approved.
pub async fn set_member_stage(tx: &mut Conn, batch: &str, position: i64, stage: i64) -> Result<(), sqlx::Error> {
    on_conn!(tx, |c| sqlx::query("UPDATE rerun_batch_members SET stage = $3 WHERE batch_id = $1 AND position = $2")
        .bind(batch)
        .bind(position)
        .bind(stage)
        .execute(c)
        .await
        .map(drop))
}

/// What the outside systems showed of a member's re-run steps after its stage settled (JSON).
pub async fn set_verified(
    tx: &mut Conn,
    batch: &str,
    position: i64,
    verified_json: &str,
    now: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    on_conn!(tx, |c| sqlx::query(
        "UPDATE rerun_batch_members SET verified_json = $3, verified_at = $4 WHERE batch_id = $1 AND position = $2"
    )
    .bind(batch)
    .bind(position)
    .bind(verified_json)
    .bind(now)
    .execute(c)
    .await
    .map(drop))
}

/// Claims (or renews) the right to run the batch's look-ups until `lease_until`; `false` when another
/// worker holds it or the batch is no longer previewing.
pub async fn claim_preview(
    tx: &mut Conn,
    id: &str,
    holder_since: Option<DateTime<Utc>>,
    now: DateTime<Utc>,
    lease_until: DateTime<Utc>,
) -> Result<bool, sqlx::Error> {
    // A worker renews its own lease (it knows when it last set it); a new worker only takes an expired one.
    changed_one!(tx, |c| sqlx::query(
        "UPDATE rerun_batches SET lease_until = $4, updated_at = $3
         WHERE id = $1 AND status = 'previewing' AND (lease_until IS NULL OR lease_until < $3 OR lease_until = $2)"
    )
    .bind(id)
    .bind(holder_since)
    .bind(now)
    .bind(lease_until)
    .execute(c)
    .await)
}

/// Previews whose worker stopped (its lease ran out): another instance carries them on.
pub async fn stale_previews(tx: &mut Conn, now: DateTime<Utc>) -> Result<Vec<String>, sqlx::Error> {
    on_conn!(tx, |c| {
        sqlx::query_scalar(
            "SELECT id FROM rerun_batches
         WHERE status = 'previewing' AND (lease_until IS NULL OR lease_until < $1) LIMIT 10",
        )
        .bind(now)
        .fetch_all(c)
        .await
    })
}

/// Batches waiting for approval past their validity.
pub async fn overdue(tx: &mut Conn, now: DateTime<Utc>) -> Result<Vec<String>, sqlx::Error> {
    on_conn!(tx, |c| {
        sqlx::query_scalar(
            "SELECT id FROM rerun_batches
         WHERE status = 'pending_approval' AND expires_at < $1 ORDER BY expires_at LIMIT 10",
        )
        .bind(now)
        .fetch_all(c)
        .await
    })
}

#[derive(Clone, Debug, sqlx::FromRow, serde::Serialize)]
pub struct MemberRow {
    pub position: i64,
    pub operation_id: i64,
    pub process_id: String,
    pub workflow: String,
    #[sqlx(try_from = "Stored<OperationStatus>")]
    pub operation_status: OperationStatus,
    /// The operation's failure class, as the integration reported it.
    pub failure_class: Option<String>,
    #[sqlx(try_from = "Stored<MemberState>")]
    pub state: MemberState,
    pub plan_json: Option<String>,
    pub reasons_json: Option<String>,
    pub request_id: Option<String>,
    #[sqlx(try_from = "Stored<Option<RerunRequestStatus>>")]
    pub request_status: Option<RerunRequestStatus>,
    pub requested_by: Option<i64>,
    #[sqlx(try_from = "Stored<Option<DispatchStatus>>")]
    pub dispatch_status: Option<DispatchStatus>,
    pub looked_up_at: Option<DateTime<Utc>>,
    /// What the integration or the outside system said went wrong since the rerun was approved: the first
    /// unfinished step's error, else the dispatch's.
    pub held_by: Option<String>,
    /// Its stage, once the batch was approved in stages.
    pub stage: Option<i64>,
    /// When its rerun went out (the dispatch ended: sent, unknown or failed).
    pub dispatched_at: Option<DateTime<Utc>>,
    /// What the outside systems showed of its re-run steps once asked again after its stage settled (JSON).
    pub verified_json: Option<String>,
}

const MEMBER_SELECT: &str = "SELECT m.position, m.operation_id, o.process_id, o.workflow, o.status AS operation_status,
        o.failure_class,
        m.state, m.plan_json, m.reasons_json, m.request_id, r.status AS request_status, r.requested_by,
        d.status AS dispatch_status,
        m.looked_up_at, m.stage, m.verified_json,
        CASE WHEN d.status = 'pending' THEN NULL ELSE d.updated_at END AS dispatched_at,
        COALESCE((SELECT s.error_class || ': ' || COALESCE(s.error_message, '') FROM steps s
                  WHERE s.operation_id = o.id AND s.completed_at IS NULL AND s.error_class IS NOT NULL
                    AND s.updated_at >= d.created_at
                  ORDER BY s.position LIMIT 1), d.last_error) AS held_by
    FROM rerun_batch_members m JOIN operations o ON o.id = m.operation_id
    LEFT JOIN rerun_requests r ON r.id = m.request_id LEFT JOIN dispatches d ON d.request_id = m.request_id";

/// Every member, in the batch's order, without its plan and reasons (following the progress needs neither).
pub async fn members_without_plans(tx: &mut Conn, batch: &str) -> Result<Vec<MemberRow>, sqlx::Error> {
    let select = MEMBER_SELECT
        .replace("m.plan_json, m.reasons_json", "CAST(NULL AS TEXT) AS plan_json, CAST(NULL AS TEXT) AS reasons_json");
    let sql = format!("{select} WHERE m.batch_id = $1 ORDER BY m.position");
    on_conn!(tx, |c| sqlx::query_as(&sql).bind(batch).fetch_all(c).await)
}

/// Every member, in the batch's order.
pub async fn members(tx: &mut Conn, batch: &str) -> Result<Vec<MemberRow>, sqlx::Error> {
    let sql = format!("{MEMBER_SELECT} WHERE m.batch_id = $1 ORDER BY m.position");
    on_conn!(tx, |c| sqlx::query_as(&sql).bind(batch).fetch_all(c).await)
}

/// The members of one stage, in the batch's order.
pub async fn members_of_stage(tx: &mut Conn, batch: &str, stage: i64) -> Result<Vec<MemberRow>, sqlx::Error> {
    let sql = format!("{MEMBER_SELECT} WHERE m.batch_id = $1 AND m.stage = $2 ORDER BY m.position");
    on_conn!(tx, |c| sqlx::query_as(&sql).bind(batch).bind(stage).fetch_all(c).await)
}

/// Members in one state, in the batch's order.
pub async fn members_in(
    tx: &mut Conn,
    batch: &str,
    state: MemberState,
    limit: i64,
) -> Result<Vec<MemberRow>, sqlx::Error> {
    let sql = format!("{MEMBER_SELECT} WHERE m.batch_id = $1 AND m.state = $2 ORDER BY m.position LIMIT $3");
    on_conn!(tx, |c| sqlx::query_as(&sql).bind(batch).bind(Stored(state)).bind(limit).fetch_all(c).await)
}

pub struct MemberUpdate<'a> {
    pub state: MemberState,
    pub plan_json: Option<&'a str>,
    pub reasons_json: Option<&'a str>,
    pub request_id: Option<&'a str>,
    pub looked_up_at: Option<DateTime<Utc>>,
}

/// Sets a member's state; the other fields are kept when `None`.
pub async fn set_member(tx: &mut Conn, batch: &str, position: i64, u: &MemberUpdate<'_>) -> Result<(), sqlx::Error> {
    on_conn!(tx, |c| sqlx::query(
        "UPDATE rerun_batch_members SET state = $3, plan_json = COALESCE($4, plan_json),
             reasons_json = COALESCE($5, reasons_json), request_id = COALESCE($6, request_id),
             looked_up_at = COALESCE($7, looked_up_at)
         WHERE batch_id = $1 AND position = $2"
    )
    .bind(batch)
    .bind(position)
    .bind(Stored(u.state))
    .bind(u.plan_json)
    .bind(u.reasons_json)
    .bind(u.request_id)
    .bind(u.looked_up_at)
    .execute(c)
    .await
    .map(drop))
}

/// Marks the member with this request dropped, with its reasons.
pub async fn drop_by_request(
    tx: &mut Conn,
    batch: &str,
    request_id: &str,
    reasons_json: &str,
) -> Result<(), sqlx::Error> {
    on_conn!(tx, |c| sqlx::query(
        "UPDATE rerun_batch_members SET state = 'dropped', reasons_json = $3 WHERE batch_id = $1 AND request_id = $2"
    )
    .bind(batch)
    .bind(request_id)
    .bind(reasons_json)
    .execute(c)
    .await
    .map(drop))
}

#[derive(Clone, Debug, sqlx::FromRow, serde::Serialize)]
pub struct CheckRow {
    pub number: i64,
    pub confirmed_by: String,
    pub confirmed_at: DateTime<Utc>,
    pub comment: String,
    pub cause_class: Option<String>,
    pub cause_text: Option<String>,
}

pub async fn checks(tx: &mut Conn, batch: &str) -> Result<Vec<CheckRow>, sqlx::Error> {
    on_conn!(tx, |c| sqlx::query_as(
        "SELECT k.number, u.display_name AS confirmed_by, k.confirmed_at, k.comment, k.cause_class, k.cause_text
         FROM rerun_batch_checks k JOIN users u ON u.id = k.confirmed_by WHERE k.batch_id = $1 ORDER BY k.number"
    )
    .bind(batch)
    .fetch_all(c)
    .await)
}

/// Confirms one check for the batch and for every requested member's checklist.
pub async fn confirm_check(
    tx: &mut Conn,
    batch: &str,
    number: i64,
    c: &super::rerun_requests::Confirmation<'_>,
    now: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    on_conn!(tx, |conn| {
        sqlx::query(
        "INSERT INTO rerun_batch_checks (batch_id, number, confirmed_by, confirmed_at, comment, cause_class, cause_text)
         VALUES ($1, $2, $3, $4, $5, $6, $7)
         ON CONFLICT (batch_id, number) DO UPDATE SET confirmed_by = $3, confirmed_at = $4, comment = $5,
             cause_class = $6, cause_text = $7"
    )
    .bind(batch)
    .bind(number)
    .bind(c.user_id)
    .bind(now)
    .bind(c.comment)
    .bind(c.cause_class)
    .bind(c.cause_text)
    .execute(conn)
    .await
    .map(drop)
    })?;
    on_conn!(tx, |conn| {
        sqlx::query(
            "UPDATE checklist_items
         SET confirmed_by = $3, confirmed_at = $4, comment = $5, cause_class = $6, cause_text = $7
         WHERE number = $2 AND request_id IN
             (SELECT request_id FROM rerun_batch_members WHERE batch_id = $1 AND state = 'requested')",
        )
        .bind(batch)
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

/// Records one owner's decision on the batch; `false` when this owner decided already.
pub async fn insert_decision(
    tx: &mut Conn,
    batch: &str,
    approver: i64,
    decision: domain::approval::Decision,
    comment: Option<&str>,
    now: DateTime<Utc>,
) -> Result<bool, sqlx::Error> {
    changed_one!(tx, |c| {
        sqlx::query(
            "INSERT INTO rerun_batch_decisions (batch_id, approver_id, decision, comment, decided_at)
         VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT (batch_id, approver_id) DO NOTHING",
        )
        .bind(batch)
        .bind(approver)
        .bind(Stored(decision))
        .bind(comment)
        .bind(now)
        .execute(c)
        .await
    })
}

pub async fn decisions(tx: &mut Conn, batch: &str) -> Result<Vec<super::rerun_requests::DecisionRow>, sqlx::Error> {
    on_conn!(tx, |c| sqlx::query_as(
        "SELECT d.approver_id, u.display_name AS approver, d.decision, d.comment, d.decided_at, d.voided_why
         FROM rerun_batch_decisions d JOIN users u ON u.id = d.approver_id WHERE d.batch_id = $1 ORDER BY d.decided_at"
    )
    .bind(batch)
    .fetch_all(c)
    .await)
}

/// The member requests whose dispatch waits (pending, not claimed by a worker now), in the batch's order.
pub async fn waiting_dispatches(tx: &mut Conn, batch: &str, now: DateTime<Utc>) -> Result<Vec<String>, sqlx::Error> {
    on_conn!(tx, |c| sqlx::query_scalar(
        "SELECT d.request_id FROM rerun_batch_members m JOIN dispatches d ON d.request_id = m.request_id
         WHERE m.batch_id = $1 AND d.status = 'pending' AND (d.lease_until IS NULL OR d.lease_until < $2)
         ORDER BY m.position"
    )
    .bind(batch)
    .bind(now)
    .fetch_all(c)
    .await)
}

/// How many member requests are still approved and not yet dispatched to an end.
pub async fn unfinished_dispatches(tx: &mut Conn, batch: &str) -> Result<i64, sqlx::Error> {
    on_conn!(tx, |c| sqlx::query_scalar(
        "SELECT COUNT(*) FROM rerun_requests WHERE batch_id = $1 AND status = 'approved'"
    )
    .bind(batch)
    .fetch_one(c)
    .await)
}

/// A selected operation: its row ID, process ID and department.
#[derive(Clone, Debug, sqlx::FromRow)]
pub struct Selected {
    pub id: i64,
    pub process_id: String,
    pub department: String,
}

/// Filters of a bulk selection (stalled operations only; on-hold ones are held on purpose).
pub struct Filter<'a> {
    pub departments: &'a [String],
    pub workflow: Option<&'a str>,
    pub event: Option<&'a str>,
    pub failure_class: Option<&'a str>,
    pub created_from: Option<DateTime<Utc>>,
    pub created_to: Option<DateTime<Utc>>,
    pub limit: i64,
}

pub async fn select_stalled(tx: &mut Conn, f: &Filter<'_>) -> Result<Vec<Selected>, sqlx::Error> {
    if f.departments.is_empty() {
        return Ok(Vec::new());
    }
    let mut conditions = vec!["status = 'stalled'".to_string()];
    let mut n = 1;
    let mut placeholder = || {
        n += 1;
        format!("${n}")
    };
    let departments: Vec<String> = f.departments.iter().map(|_| placeholder()).collect();
    conditions.push(format!("department IN ({})", departments.join(", ")));
    for (value, column) in [(f.workflow, "workflow"), (f.event, "event"), (f.failure_class, "failure_class")] {
        if value.is_some() {
            conditions.push(format!("{column} = {}", placeholder()));
        }
    }
    if f.created_from.is_some() {
        conditions.push(format!("created_at >= {}", placeholder()));
    }
    if f.created_to.is_some() {
        conditions.push(format!("created_at < {}", placeholder()));
    }
    let sql = format!(
        "SELECT id, process_id, department FROM operations WHERE {} ORDER BY id LIMIT $1",
        conditions.join(" AND ")
    );
    on_conn!(tx, |c| {
        let mut query = sqlx::query_as(&sql).bind(f.limit);
        for d in f.departments {
            query = query.bind(d);
        }
        for value in [f.workflow, f.event, f.failure_class].into_iter().flatten() {
            query = query.bind(value);
        }
        for time in [f.created_from, f.created_to].into_iter().flatten() {
            query = query.bind(time);
        }
        query.fetch_all(c).await
    })
}

/// The operations with these process IDs (those that exist), in the order given.
pub async fn select_by_process_ids(tx: &mut Conn, process_ids: &[String]) -> Result<Vec<Selected>, sqlx::Error> {
    let mut found = Vec::new();
    for chunk in process_ids.chunks(500) {
        let sql = format!(
            "SELECT id, process_id, department FROM operations WHERE process_id IN ({})",
            super::params(0, chunk.len())
        );
        let rows: Vec<Selected> = on_conn!(tx, |c| {
            let mut query = sqlx::query_as(&sql);
            for p in chunk {
                query = query.bind(p);
            }
            query.fetch_all(c).await
        })?;
        found.extend(rows);
    }
    found.sort_by_key(|s| process_ids.iter().position(|p| *p == s.process_id));
    Ok(found)
}

/// The approvals `user_id` gave that still count, on bulk reruns that still wait: (batch ID, department).
pub async fn waiting_approvals_by(tx: &mut Conn, user_id: i64) -> Result<Vec<(String, String)>, sqlx::Error> {
    on_conn!(tx, |c| sqlx::query_as(
        "SELECT b.id, b.department FROM rerun_batch_decisions d JOIN rerun_batches b ON b.id = d.batch_id
         WHERE d.approver_id = $1 AND d.decision = 'approved' AND d.voided_at IS NULL
           AND b.status = 'pending_approval' ORDER BY b.id"
    )
    .bind(user_id)
    .fetch_all(c)
    .await)
}

/// The approval stops counting, and says why.
pub async fn void_approval(
    tx: &mut Conn,
    batch: &str,
    user_id: i64,
    why: &str,
    now: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    on_conn!(tx, |c| sqlx::query(
        "UPDATE rerun_batch_decisions SET voided_at = $3, voided_why = $4 WHERE batch_id = $1 AND approver_id = $2"
    )
    .bind(batch)
    .bind(user_id)
    .bind(now)
    .bind(why)
    .execute(c)
    .await
    .map(drop))
}
