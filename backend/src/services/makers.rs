//! Maker ≠ checker (QUALITY 11): each part of preparing a rerun is recorded as it is done, and the ballot the
//! approval rule (`domain::approval::may_decide`) decides on lists every maker, for single and bulk alike.
use super::Caller;
use crate::db::batches::{BatchRow, MemberRow};
use crate::db::rerun_requests::{DecisionRow, RequestRow};
use crate::db::{self, Conn};
use chrono::{DateTime, Utc};
use contract::AppError;
use domain::approval::{Ballot, Maker, MakerPart};
use domain::batches::MemberState;

/// The caller took this part in preparing the request.
pub(super) async fn took_part(
    tx: &mut Conn,
    caller: &Caller,
    request_id: &str,
    part: MakerPart,
    now: DateTime<Utc>,
) -> Result<(), AppError> {
    let maker = Maker { user_id: caller.user_id(), part };
    Ok(db::makers::add_to_request(tx, request_id, maker, now).await?)
}

/// The caller took this part in preparing the bulk rerun.
pub(super) async fn took_part_in_batch(
    tx: &mut Conn,
    caller: &Caller,
    batch_id: &str,
    part: MakerPart,
    now: DateTime<Utc>,
) -> Result<(), AppError> {
    let maker = Maker { user_id: caller.user_id(), part };
    Ok(db::makers::add_to_batch(tx, batch_id, maker, now).await?)
}

/// At submission: whoever recorded a manual verdict that the request's plan rests on is one of its makers.
pub(super) async fn verdicts_rested_on(
    tx: &mut Conn,
    request: &RequestRow,
    now: DateTime<Utc>,
) -> Result<(), AppError> {
    for user_id in db::makers::verdict_recorders(tx, request.operation_id).await? {
        let maker = Maker { user_id, part: MakerPart::RecordedVerdict };
        db::makers::add_to_request(tx, &request.id, maker, now).await?;
    }
    Ok(())
}

/// The manual verdicts an operation rests on now: recorded at submission, and read again at the decision
/// (a verdict recorded since then voids the plan anyway; a request submitted before makers were recorded
/// still names them).
async fn verdict_makers(tx: &mut Conn, operation_id: i64) -> Result<Vec<Maker>, AppError> {
    let recorders = db::makers::verdict_recorders(tx, operation_id).await?;
    Ok(recorders.into_iter().map(|user_id| Maker { user_id, part: MakerPart::RecordedVerdict }).collect())
}

/// What the approval rule needs to know of a request: its department, its makers, who decided already.
pub(super) async fn request_ballot(tx: &mut Conn, request: &RequestRow) -> Result<Ballot, AppError> {
    let mut makers = db::makers::of_request(tx, &request.id).await?;
    makers.extend(verdict_makers(tx, request.operation_id).await?);
    let decisions = db::rerun_requests::decisions(tx, &request.id).await?;
    Ok(Ballot { department: request.department.clone(), makers, decided: decided(&decisions) })
}

/// What the approval rule needs to know of a bulk rerun: its own makers and those of every member's request.
/// One ballot holds the rule for the batch and for each member at once: a member alone has the same department
/// and decisions, and its makers are among the batch's.
pub(super) async fn batch_ballot(tx: &mut Conn, batch: &BatchRow, members: &[MemberRow]) -> Result<Ballot, AppError> {
    let mut makers = db::makers::of_batch(tx, &batch.id).await?;
    makers.extend(db::makers::of_batch_members(tx, &batch.id).await?);
    for member in members.iter().filter(|m| m.state == MemberState::Requested) {
        makers.extend(verdict_makers(tx, member.operation_id).await?);
    }
    let decisions = db::batches::decisions(tx, &batch.id).await?;
    Ok(Ballot { department: batch.department.clone(), makers, decided: decided(&decisions) })
}

fn decided(decisions: &[DecisionRow]) -> Vec<i64> {
    decisions.iter().map(|d| d.approver_id).collect()
}
