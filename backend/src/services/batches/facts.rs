//! What a bulk rerun's rows say, read by the batch's own services and by the chat card (which must not depend on
//! the rest of the batch's code): how far its members went, and whether a failed stage stopped it, waiting for
//! its managers' decision.
use crate::db;
use crate::db::batches::{BatchRow, MemberRow};
use contract::AppError;
use domain::batches::{BatchStatus, MemberState, Progress};
use domain::canary::StageOutcome;

/// How many of the requested members are at each stage of the dispatch.
pub fn progress_of(members: &[MemberRow]) -> Vec<(Progress, usize)> {
    Progress::ALL.into_iter().map(|p| (p, members.iter().filter(|m| member_progress(m) == Some(p)).count())).collect()
}

/// A member's stage of the dispatch; `None` until it is requested.
pub fn member_progress(m: &MemberRow) -> Option<Progress> {
    let request = m.request_status.filter(|_| m.state == MemberState::Requested)?;
    Some(Progress::of(request, m.dispatch_status, m.operation_status))
}

/// The stage (numbered from 1) that failed and stopped the batch, while no manager has decided on it.
pub async fn stopped_stage(tx: &mut db::Conn, batch: &BatchRow) -> Result<Option<u32>, AppError> {
    if batch.status != BatchStatus::Paused || batch.stages_json.is_none() {
        return Ok(None);
    }
    Ok(stopped_at(batch, db::stages::get(tx, &batch.id, batch.stage).await?.as_ref()))
}

/// The same, from the batch's current stage as read.
pub fn stopped_at(batch: &BatchRow, current: Option<&db::stages::StageRow>) -> Option<u32> {
    let stopped = batch.status == BatchStatus::Paused
        && current.is_some_and(|s| {
            s.stage == batch.stage && s.verdict == Some(StageOutcome::Failed) && s.resumed_at.is_none()
        });
    stopped.then_some(batch.stage as u32 + 1)
}
