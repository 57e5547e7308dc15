//! A rerun request's life (SPEC "Rerun request"): its states and the one table of moves between them. The
//! services ask `next` for every change and the database compares-and-sets on the state they read, so a request
//! never jumps a step, and two people acting at once cannot both move it.
use super::names::named;
use super::operations::OperationEvent;
use std::fmt;

named! {
    pub enum RerunRequestStatus {
        /// Planned; the five checks are being confirmed.
        Draft => "draft",
        PendingApproval => "pending_approval",
        /// Approved: its dispatch waits in the outbox.
        Approved => "approved",
        Rejected => "rejected",
        Expired => "expired",
        /// Withdrawn by staff, or voided because what the approval was bound to changed.
        Cancelled => "cancelled",
        /// Sent (or sent without an answer: reconciliation settles it).
        Dispatched => "dispatched",
        Succeeded => "succeeded",
        Failed => "failed",
    }
}

/// What happens to a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RequestEvent {
    /// All five checks confirmed: to the owners.
    Submit,
    /// Staff take it back before it is approved.
    Withdraw,
    /// The approvals needed are there.
    Approve,
    Reject,
    /// Its validity ran out before it was approved or used.
    Expire,
    /// What the approval was bound to changed (or a bulk rerun dropped it): back to staff.
    Void,
    /// The rerun was posted (2xx), or posted without an answer.
    Sent,
    /// Every planned step turned out executed at the outside system: nothing to send, done.
    NothingToSend,
    /// The receiver refused it, is gone, or the attempts ran out.
    SendFailed,
    /// Every step of the operation was reported complete: whatever was open for it is done.
    Completed,
    /// The rerun was sent, and the operation stalled again (the sweeper moves the operation with the stall).
    RerunStalled,
}

impl RequestEvent {
    pub const ALL: [RequestEvent; 11] = [
        RequestEvent::Submit,
        RequestEvent::Withdraw,
        RequestEvent::Approve,
        RequestEvent::Reject,
        RequestEvent::Expire,
        RequestEvent::Void,
        RequestEvent::Sent,
        RequestEvent::NothingToSend,
        RequestEvent::SendFailed,
        RequestEvent::Completed,
        RequestEvent::RerunStalled,
    ];

    /// How the operation moves with its request: a request waiting for approval holds the operation in
    /// `rerun_pending`; a sent rerun makes it `rerunning`; a request that goes back to staff or fails leaves it
    /// stalled again. `None`: the operation stays where it is.
    pub fn operation_move(self) -> Option<OperationEvent> {
        use RequestEvent as E;
        match self {
            E::Submit => Some(OperationEvent::AwaitApproval),
            E::Sent => Some(OperationEvent::Rerun),
            E::Withdraw | E::Reject | E::Expire | E::Void | E::NothingToSend | E::SendFailed => {
                Some(OperationEvent::BackToStaff)
            }
            E::Approve | E::Completed | E::RerunStalled => None,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Refused {
    pub from: RerunRequestStatus,
    pub event: RequestEvent,
}

impl fmt::Display for Refused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "a request that is {} cannot take {:?}", self.from.as_str(), self.event)
    }
}

impl RerunRequestStatus {
    /// The move this event makes from this state, or a refusal.
    pub fn next(self, event: RequestEvent) -> Result<RerunRequestStatus, Refused> {
        use RequestEvent as E;
        use RerunRequestStatus as S;
        match (self, event) {
            (S::Draft, E::Submit) => Ok(S::PendingApproval),
            (S::Draft | S::PendingApproval, E::Withdraw) => Ok(S::Cancelled),
            (S::PendingApproval, E::Approve) => Ok(S::Approved),
            (S::PendingApproval, E::Reject) => Ok(S::Rejected),
            (S::PendingApproval | S::Approved, E::Expire) => Ok(S::Expired),
            (S::Draft | S::PendingApproval | S::Approved, E::Void) => Ok(S::Cancelled),
            (S::Approved, E::Sent) => Ok(S::Dispatched),
            (S::Approved, E::NothingToSend) => Ok(S::Succeeded),
            (S::Approved, E::SendFailed) => Ok(S::Failed),
            (S::Dispatched, E::RerunStalled) => Ok(S::Failed),
            (S::Draft | S::PendingApproval | S::Approved | S::Dispatched, E::Completed) => Ok(S::Succeeded),
            (from, event) => Err(Refused { from, event }),
        }
    }

    /// When the move to this state stamps the request: submitted, or decided by the owners.
    pub fn is_submission(self) -> bool {
        self == RerunRequestStatus::PendingApproval
    }

    pub fn is_decision(self) -> bool {
        matches!(self, RerunRequestStatus::Approved | RerunRequestStatus::Rejected)
    }

    /// Still open: the operation has at most one open request.
    pub fn is_open(self) -> bool {
        matches!(
            self,
            RerunRequestStatus::Draft
                | RerunRequestStatus::PendingApproval
                | RerunRequestStatus::Approved
                | RerunRequestStatus::Dispatched
        )
    }
}

#[cfg(test)]
mod tests {
    use super::RequestEvent as E;
    use super::RerunRequestStatus as S;
    use super::*;

    #[test]
    fn every_status_reads_back_from_its_name() {
        for status in S::ALL {
            assert_eq!(S::parse(status.as_str()), Some(*status));
        }
        assert_eq!(S::parse("approved_twice"), None);
    }

    #[test]
    fn the_happy_path_goes_draft_pending_approved_dispatched_succeeded() {
        let mut status = S::Draft;
        for event in [E::Submit, E::Approve, E::Sent, E::Completed] {
            status = status.next(event).unwrap();
        }
        assert_eq!(status, S::Succeeded);
    }

    #[test]
    fn nothing_is_sent_unless_approved_and_nothing_is_approved_twice() {
        for from in [
            S::Draft,
            S::PendingApproval,
            S::Rejected,
            S::Expired,
            S::Cancelled,
            S::Dispatched,
            S::Succeeded,
            S::Failed,
        ] {
            assert!(from.next(E::Sent).is_err(), "sent from {from}");
        }
        for from in [S::Draft, S::Approved, S::Dispatched, S::Rejected] {
            assert_eq!(from.next(E::Approve), Err(Refused { from, event: E::Approve }));
        }
        assert!(S::Approved.next(E::Withdraw).is_err(), "an approved request is voided or expires, never withdrawn");
    }

    #[test]
    fn the_operation_waits_while_its_request_does_and_is_stalled_again_when_it_goes_back() {
        use crate::operations::OperationStatus as O;
        let moves = |e: E| e.operation_move().map(OperationEvent::moves);
        assert_eq!(moves(E::Submit), Some((O::Stalled, O::RerunPending)));
        assert_eq!(moves(E::Sent), Some((O::RerunPending, O::Rerunning)));
        for back in [E::Withdraw, E::Reject, E::Expire, E::Void, E::SendFailed] {
            assert_eq!(moves(back), Some((O::RerunPending, O::Stalled)), "{back:?}");
        }
        assert_eq!(E::Approve.operation_move(), None, "an approved rerun still waits for its send");
    }

    #[test]
    fn a_request_that_ended_stays_ended() {
        for from in [S::Rejected, S::Expired, S::Cancelled, S::Succeeded, S::Failed] {
            assert!(!from.is_open());
            for event in E::ALL {
                assert!(from.next(event).is_err(), "{from} took {event:?}");
            }
        }
    }
}
