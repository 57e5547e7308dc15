//! Operations and their steps: identifiers, states, the step-event rules and the completion flag.
use serde::{Deserialize, Serialize};
use std::fmt;

use super::ids::text_id;

text_id!(
    /// The integration's own ID of one run (`process_id`): unique, kept across reruns.
    ProcessId, "process_id", 128,
    |c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | ':' | '/')
);

text_id!(
    /// The key an outside system deduplicates one business effect with; a rerun reuses it.
    IdempotencyKey, "idempotency key", 255,
    |c| c.is_ascii_graphic()
);

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub enum OperationStatus {
    Running,
    Stalled,
    OnHold,
    RerunPending,
    Rerunning,
    Completed,
    Resolved,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub enum StepState {
    NotStarted,
    Started,
    Succeeded,
    Failed,
    Unknown,
}

/// The enums the OpenAPI document is derived from keep serde's `rename_all`: utoipa does not read a variant's
/// rename that comes through a macro (`domain::names::named!`), and the document would list `NotStarted`.
macro_rules! snake_names {
    ($t:ty { $($variant:ident => $name:literal),+ $(,)? }) => {
        impl $t {
            pub fn as_str(self) -> &'static str {
                match self { $(Self::$variant => $name),+ }
            }
            pub fn parse(s: &str) -> Option<Self> {
                match s { $($name => Some(Self::$variant),)+ _ => None }
            }
        }
        impl fmt::Display for $t {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

snake_names!(OperationStatus {
    Running => "running", Stalled => "stalled", OnHold => "on_hold", RerunPending => "rerun_pending",
    Rerunning => "rerunning", Completed => "completed", Resolved => "resolved",
});

/// What moves an operation between the states people and reruns take it through. Each event makes one move,
/// compared-and-set on its `from` state; completion is reached from any state once every step is complete.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OperationEvent {
    /// The sweeper found it not progressing.
    Stall,
    Hold,
    Release,
    /// Its rerun request went to the owners.
    AwaitApproval,
    /// Its rerun was sent.
    Rerun,
    /// The sweeper found its rerun not progressing (a step failed, or no report within its deadline).
    RerunStalled,
    /// Its rerun request went back to staff, ended, or its rerun could not be sent.
    BackToStaff,
}

impl OperationEvent {
    /// The one move this event makes: from, to.
    pub fn moves(self) -> (OperationStatus, OperationStatus) {
        use OperationStatus as S;
        match self {
            OperationEvent::Stall => (S::Running, S::Stalled),
            OperationEvent::Hold => (S::Stalled, S::OnHold),
            OperationEvent::Release => (S::OnHold, S::Stalled),
            OperationEvent::AwaitApproval => (S::Stalled, S::RerunPending),
            OperationEvent::Rerun => (S::RerunPending, S::Rerunning),
            OperationEvent::RerunStalled => (S::Rerunning, S::Stalled),
            OperationEvent::BackToStaff => (S::RerunPending, S::Stalled),
        }
    }
}

snake_names!(StepState {
    NotStarted => "not_started", Started => "started", Succeeded => "succeeded", Failed => "failed",
    Unknown => "unknown",
});

/// What an integration reports about one step.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub enum StepEventType {
    Started,
    Succeeded,
    Failed,
    Unknown,
    Heartbeat,
}

snake_names!(StepEventType {
    Started => "started", Succeeded => "succeeded", Failed => "failed", Unknown => "unknown", Heartbeat => "heartbeat",
});

impl StepEventType {
    /// The state a step is in after this event (a heartbeat keeps it started).
    pub fn resulting_state(self) -> StepState {
        match self {
            StepEventType::Started | StepEventType::Heartbeat => StepState::Started,
            StepEventType::Succeeded => StepState::Succeeded,
            StepEventType::Failed => StepState::Failed,
            StepEventType::Unknown => StepState::Unknown,
        }
    }
}

/// A late or repeated event never overwrites a newer one: only a strictly greater `seq` is applied.
pub fn is_newer(stored_seq: Option<i64>, incoming_seq: i64) -> bool {
    stored_seq.is_none_or(|stored| incoming_seq > stored)
}

/// Once a step's success is confirmed, nothing but a newer success may touch it again: its completion flag
/// is the promise that the effect happened, and a rerun must never repeat it.
pub fn may_leave_success(current: StepState, next: StepState) -> bool {
    current != StepState::Succeeded || next == StepState::Succeeded
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_strictly_newer_seq_is_applied() {
        assert!(is_newer(None, 0));
        assert!(is_newer(Some(2), 3));
        assert!(!is_newer(Some(3), 3));
        assert!(!is_newer(Some(3), 2));
    }

    #[test]
    fn a_succeeded_step_does_not_fall_back_to_failed_or_started() {
        assert!(!may_leave_success(StepState::Succeeded, StepState::Failed));
        assert!(!may_leave_success(StepState::Succeeded, StepState::Started));
        assert!(may_leave_success(StepState::Failed, StepState::Succeeded));
    }

    #[test]
    fn names_read_back() {
        for s in ["running", "stalled", "on_hold", "rerun_pending", "rerunning", "completed", "resolved"] {
            assert_eq!(OperationStatus::parse(s).unwrap().as_str(), s);
        }
        assert_eq!(StepEventType::parse("heartbeat"), Some(StepEventType::Heartbeat));
        assert_eq!(StepEventType::parse("done"), None);
    }

    #[test]
    fn a_process_id_with_spaces_is_refused() {
        assert!(ProcessId::parse("ORD-2026-0001").is_ok());
        assert!(ProcessId::parse("ORD 1").is_err());
    }
}
