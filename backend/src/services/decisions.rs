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

/// The approval rule for this caller now, its refusal as the caller hears it (`what` names the object, for the
/// log).
pub(super) fn allowed(caller: &Caller, ballot: &Ballot, what: &str) -> Result<(), AppError> {
    may_decide(&caller.person(), ballot).map_err(|refusal| {
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

/// The approvals that count (distinct people, none a maker), and whether they are enough.
pub(super) fn tally(decisions: &[DecisionRow], ballot: &Ballot, required: u32) -> (u32, bool) {
    let approvers: Vec<i64> =
        decisions.iter().filter(|d| d.decision == Decision::Approve).map(|d| d.approver_id).collect();
    let approvals = counted(&approvers, ballot);
    (approvals, is_approved(approvals, required))
}
