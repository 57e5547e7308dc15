//! What every decision does around the approval rule, single and bulk, page and API (and chat, which calls the
//! same services): the comment (required to reject), a sign-in fresh enough, the rule itself on the ballot
//! (`domain::approval::may_decide`), and the tally of the approvals that count.
use super::Caller;
use crate::AppState;
use crate::db::rerun_requests::DecisionRow;
use contract::AppError;
use domain::approval::{Ballot, Decision, Refusal, counted, is_approved, may_decide};
use domain::conflict::Conflict;
use domain::holds::reason;
use domain::identity::Authentication;
use domain::invalid::Field;
use domain::rights::Act;

/// A decision as given, checked before anything is read: its comment, and how the person proved who they are.
pub(super) struct Given<'a> {
    pub comment: Option<String>,
    pub authenticated: &'a Authentication,
}

/// A rejection needs its reason; an approval's comment is optional. Either needs a fresh sign-in.
pub(super) fn given<'a>(
    state: &AppState,
    caller: &'a Caller,
    decision: Decision,
    comment: &str,
) -> Result<Given<'a>, AppError> {
    let comment = match decision {
        Decision::Reject => Some(reason(comment).map_err(|m| AppError::invalid(Field::Comment, m))?),
        Decision::Approve => Some(comment.trim().to_string()).filter(|c| !c.is_empty()),
    };
    let authenticated = caller.fresh_sign_in(state)?;
    Ok(Given { comment, authenticated })
}

/// The approval rule for this caller as they are now (read again in the decision's transaction:
/// `session_users::as_now`), its refusal as the caller hears it (`what` names the object, for the log).
pub(super) async fn allowed(
    tx: &mut crate::db::Conn,
    caller: &Caller,
    ballot: &Ballot,
    what: &str,
) -> Result<(), AppError> {
    let person = super::session_users::as_now(tx, caller).await.inspect_err(|_| {
        let user = &caller.user().username;
        tracing::warn!(%user, what, "a decision by a person whose access ended meanwhile refused");
    })?;
    may_decide(&person, ballot).map_err(|refusal| {
        let user = &caller.user().username;
        match refusal {
            Refusal::NotOwner(refusal) => caller.act_refused(refusal, Act::Decide, what),
            Refusal::Maker(part) => {
                tracing::warn!(%user, what, %part, "a maker's decision refused (maker ≠ checker)");
                AppError::Forbidden
            }
            Refusal::AlreadyDecided => AppError::conflict(Conflict::AlreadyDecided, "you decided on this already"),
        }
    })
}

/// Of `people` who decided on something of `department`, those who may still decide there now (read in the
/// caller's transaction): a decision whose giver's access ended since no longer counts.
pub(super) async fn still_deciding(
    tx: &mut crate::db::Conn,
    department: &str,
    people: &[i64],
) -> Result<Vec<i64>, AppError> {
    let mut still = Vec::new();
    for id in people {
        let person = super::session_users::person_now(tx, *id).await?;
        if person.is_some_and(|p| domain::directory::approval_still_counts(&p, department)) {
            still.push(*id);
        }
    }
    Ok(still)
}

/// The approvals that count (distinct people, none a maker, none whose giver can no longer decide here), and
/// whether they are enough.
pub(super) fn tally(decisions: &[DecisionRow], ballot: &Ballot, required: u32) -> (u32, bool) {
    let approvers: Vec<i64> =
        decisions.iter().filter(|d| d.decision == Decision::Approve && d.counts()).map(|d| d.approver_id).collect();
    let approvals = counted(&approvers, ballot);
    (approvals, is_approved(approvals, required))
}

/// A decision as the pages show it: an approval that no longer counts says so.
pub(super) fn view(d: DecisionRow) -> contract::reruns::DecisionView {
    contract::reruns::DecisionView {
        no_longer_counts: !d.counts(),
        approver: d.approver,
        decision: d.decision,
        comment: d.comment,
        decided_at: d.decided_at,
    }
}
