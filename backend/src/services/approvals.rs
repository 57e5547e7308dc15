//! Approval by the department's owners: never by a maker of the request, N of M, bound to the plan, within its
//! validity. The final approval records the dispatch (the outbox row) in the same transaction, so an approval
//! is never lost and never dispatched twice: the request row is locked for the decision.
use super::Caller;
use super::audit::record;
use super::notifications::{Audience, notify};
use super::rerun_requests::{advance, plan_changed, plan_check};
use crate::db::rerun_requests::RequestRow;
use crate::{AppState, db};
use chrono::{DateTime, Utc};
use contract::AppError;
use domain::approval::{Ballot, Decision, is_expired};
use domain::audit::{AuditEntry, ObjectType};
use domain::audit_action::AuditAction;
use domain::chat::ChatSubject;
use domain::conflict::Conflict;
use domain::notifications::RerunNews;
use domain::reasons::SystemReason;
use domain::rerun_plan::Change;
use domain::rerun_request::{RequestEvent, RerunRequestStatus};
use serde_json::json;

/// Locks the request and applies the approval rule to this caller now.
async fn decidable(tx: &mut db::Conn, caller: &Caller, id: &str) -> Result<(RequestRow, Ballot), AppError> {
    let request = db::rerun_requests::lock(tx, id).await?.ok_or(AppError::NotFound)?;
    let ballot = super::makers::request_ballot(tx, &request).await?;
    super::decisions::allowed(tx, caller, &ballot, id).await?;
    super::rerun_requests::not_in_batch(&request)?;
    // Both decisions need a request that waits for one.
    request.status.next(RequestEvent::Reject)?;
    Ok((request, ballot))
}

pub async fn decide(
    state: &AppState,
    caller: &Caller,
    id: &str,
    decision: Decision,
    comment: &str,
) -> Result<(), AppError> {
    let super::decisions::Given { comment, authenticated } = super::decisions::given(state, caller, decision, comment)?;
    let now = state.clock.now();
    let mut tx = state.db.begin_write().await?;
    let (request, ballot) = decidable(&mut tx, caller, id).await?;
    // Past its validity, or on a plan that no longer holds, the request goes back to staff.
    if is_expired(db::rerun_requests::expires_at(&mut tx, id).await?, now) {
        back_to_staff(&mut tx, state, caller, &request, RequestEvent::Expire, SystemReason::ValidityRanOut, &[], now)
            .await?;
        tx.commit().await?;
        return Err(AppError::conflict(Conflict::Expired, "the request expired before it was approved"));
    }
    let check = plan_check(state, &mut tx, &request, &[]).await?;
    if !check.holds() {
        back_to_staff(
            &mut tx,
            state,
            caller,
            &request,
            RequestEvent::Void,
            SystemReason::PlanNoLongerHolds,
            &check.changes,
            now,
        )
        .await?;
        tx.commit().await?;
        return Err(plan_changed());
    }
    if !db::rerun_requests::insert_decision(&mut tx, id, caller.user_id(), decision, comment.as_deref(), now).await? {
        return Err(AppError::conflict(Conflict::AlreadyDecided, "you decided on this request already"));
    }
    match decision {
        Decision::Reject => {
            advance(&mut tx, &request, RequestEvent::Reject, now).await?;
            let entry = entry(caller, &request, AuditAction::RerunRequestRejected)
                .after(json!({"rerun_id": id, "status": RerunRequestStatus::Rejected, "makers": ballot.makers}))
                .authenticated(authenticated)
                .reason(comment.unwrap_or_default());
            record(&mut tx, entry, caller.request_id.as_deref(), now).await?;
            notify(&mut tx, state, &request, RerunNews::Rejected, Audience::Requester, now).await?;
        }
        Decision::Approve => {
            let required = state.config.approvals_required(&request.workflow);
            let decisions = db::rerun_requests::decisions(&mut tx, id).await?;
            let (approvals, enough) = super::decisions::tally(&decisions, &ballot, required);
            if enough {
                advance(&mut tx, &request, RequestEvent::Approve, now).await?;
                db::rerun_requests::insert_dispatch(&mut tx, id, now, now).await?;
                let plan = request.plan()?;
                let entry = entry(caller, &request, AuditAction::RerunRequestApproved)
                    .after(json!({"rerun_id": id, "status": RerunRequestStatus::Approved, "approvals": approvals,
                        "plan": plan, "makers": ballot.makers}))
                    .authenticated(authenticated);
                record(&mut tx, entry, caller.request_id.as_deref(), now).await?;
                notify(&mut tx, state, &request, RerunNews::Approved, Audience::Requester, now).await?;
                tx.commit().await?;
                state.dispatch_wake.notify_one();
                return Ok(());
            } else {
                let entry = entry(caller, &request, AuditAction::RerunRequestApprovalRecorded)
                    .after(
                        json!({"rerun_id": id, "approvals": approvals, "required": required, "makers": ballot.makers}),
                    )
                    .authenticated(authenticated);
                record(&mut tx, entry, caller.request_id.as_deref(), now).await?;
                super::chat::changed(&mut tx, &ChatSubject::Request(id.to_string()), now).await?;
            }
        }
    }
    tx.commit().await?;
    Ok(())
}

fn entry(caller: &Caller, request: &RequestRow, action: AuditAction) -> AuditEntry {
    AuditEntry::new(caller.actor(), action, ObjectType::Operation, &request.process_id)
        .department(Some(&request.department))
        .before(json!({"rerun_id": request.id, "status": request.status}))
}

#[allow(clippy::too_many_arguments)]
async fn back_to_staff(
    tx: &mut db::Conn,
    state: &AppState,
    caller: &Caller,
    request: &RequestRow,
    event: RequestEvent,
    why: SystemReason,
    changes: &[Change],
    now: DateTime<Utc>,
) -> Result<(), AppError> {
    let status = advance(tx, request, event, now).await?.to;
    let action =
        if event == RequestEvent::Expire { AuditAction::RerunRequestExpired } else { AuditAction::RerunRequestVoided };
    let after = json!({"rerun_id": request.id, "status": status, "changes": changes});
    let entry = entry(caller, request, action).after(after).reason(why.text());
    record(tx, entry, caller.request_id.as_deref(), now).await?;
    notify(tx, state, request, RerunNews::SentBack, Audience::Requester, now).await?;
    Ok(())
}

/// Requests nobody decided on within their validity go back to staff (run by the sweeper).
pub async fn expire_overdue(state: &AppState) -> Result<usize, AppError> {
    let now = state.clock.now();
    let overdue = {
        let mut tx = state.db.begin_read().await?;
        db::rerun_requests::overdue(&mut tx, now).await?
    };
    let mut expired = 0;
    for id in overdue {
        let mut tx = state.db.begin_write().await?;
        let Some(request) = db::rerun_requests::lock(&mut tx, &id).await? else { continue };
        if request.status != RerunRequestStatus::PendingApproval {
            continue; // decided meanwhile
        }
        advance(&mut tx, &request, RequestEvent::Expire, now).await?;
        let entry = AuditEntry::new(
            domain::audit::Actor::system(domain::audit::SystemActor::Sweeper),
            AuditAction::RerunRequestExpired,
            ObjectType::Operation,
            &request.process_id,
        )
        .department(Some(&request.department))
        .before(json!({"rerun_id": id, "status": RerunRequestStatus::PendingApproval}))
        .after(json!({"rerun_id": id, "status": RerunRequestStatus::Expired}))
        .reason(SystemReason::NoDecisionInTime.text());
        record(&mut tx, entry, None, now).await?;
        notify(&mut tx, state, &request, RerunNews::Expired, Audience::Both, now).await?;
        tx.commit().await?;
        expired += 1;
    }
    Ok(expired)
}
