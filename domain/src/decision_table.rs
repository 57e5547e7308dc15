//! The decision table of the source document: for each of the ten events, the actions its row allows.
//! The row's words (the state at the other side, the next action, the records to compare, the owner and cost)
//! and the actions' names are UI text, in the `operation` namespace (`ui::operation::decision_texts`).
use super::stall::StallEvent;
use serde::{Deserialize, Serialize};

/// What staff may do about a stalled operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    /// Ask the outside systems what really happened.
    Reconcile,
    /// Start a rerun request for the steps proven not executed.
    RequestRerun,
    /// Use the result that exists: confirm the completion flag, send nothing.
    ConfirmExisting,
    /// Put on hold while someone asks the provider.
    Hold,
    /// Close without rerun (already processed, or must not be overwritten).
    Resolve,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DecisionRow {
    pub event: StallEvent,
    pub allowed: &'static [Action],
}

use Action::*;

const ROWS: [DecisionRow; 10] = [
    DecisionRow { event: StallEvent::AuthExpired, allowed: &[Reconcile, RequestRerun, Hold] },
    DecisionRow { event: StallEvent::RateLimited, allowed: &[Reconcile, RequestRerun, Hold] },
    DecisionRow { event: StallEvent::TemporaryFailure, allowed: &[Reconcile, RequestRerun, Hold] },
    DecisionRow { event: StallEvent::NoResponse, allowed: &[Reconcile, ConfirmExisting, Hold] },
    DecisionRow { event: StallEvent::DuplicateNotification, allowed: &[Reconcile, ConfirmExisting, Resolve] },
    DecisionRow { event: StallEvent::StaleNotification, allowed: &[Reconcile, Resolve, Hold] },
    DecisionRow { event: StallEvent::PartialSuccess, allowed: &[Reconcile, RequestRerun, Hold] },
    DecisionRow { event: StallEvent::AiInProgress, allowed: &[Reconcile, Hold] },
    DecisionRow { event: StallEvent::CancelRequested, allowed: &[Reconcile, RequestRerun, Hold] },
    DecisionRow { event: StallEvent::ResultUnknown, allowed: &[Hold, Reconcile] },
];

pub fn row(event: StallEvent) -> &'static DecisionRow {
    ROWS.iter().find(|r| r.event == event).expect("every event has a row")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_event_has_exactly_one_row() {
        for event in StallEvent::ALL {
            assert_eq!(ROWS.iter().filter(|r| r.event == event).count(), 1, "{event:?}");
        }
    }

    #[test]
    fn rows_that_say_do_not_resend_never_offer_a_rerun() {
        for event in [
            StallEvent::NoResponse,
            StallEvent::DuplicateNotification,
            StallEvent::StaleNotification,
            StallEvent::AiInProgress,
            StallEvent::ResultUnknown,
        ] {
            assert!(!row(event).allowed.contains(&RequestRerun), "{event:?}");
        }
    }
}
