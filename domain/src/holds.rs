//! Holds and manual verdicts: the people's side of reconciliation. A hold stops work on a stalled
//! operation until someone lets it go; both need a reason that says why, in words.
use super::invalid::{Invalid, Rule};
use super::operations::{OperationEvent, OperationStatus};
use super::reconciliation::Verdict;

pub const MAX_REASON_CHARS: usize = 2_000;

/// Only a stalled operation can be put on hold (a running one has nothing to wait for yet).
pub fn may_be_held(status: OperationStatus) -> bool {
    status == OperationEvent::Hold.moves().0
}

/// A reason or evidence text: trimmed, not empty, not endless.
pub fn reason(text: &str) -> Result<String, Invalid> {
    let text = text.trim();
    if text.is_empty() {
        return Err(Invalid::new(Rule::Required, "a reason is required"));
    }
    if text.chars().count() > MAX_REASON_CHARS {
        return Err(Invalid::new(Rule::TooLong, format!("at most {MAX_REASON_CHARS} characters")));
    }
    Ok(text.to_string())
}

/// What a manager may record by hand: what someone found out, not "in progress" or a failed look-up.
pub fn may_record_by_hand(verdict: Verdict) -> bool {
    matches!(verdict, Verdict::Executed | Verdict::ExecutedMismatch | Verdict::NotExecuted | Verdict::Unknown)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_stalled_operation_can_be_held() {
        assert!(may_be_held(OperationStatus::Stalled));
        assert!(!may_be_held(OperationStatus::Running));
        assert!(!may_be_held(OperationStatus::OnHold));
        assert!(!may_be_held(OperationStatus::Completed));
    }

    #[test]
    fn a_reason_is_trimmed_required_and_bounded() {
        assert_eq!(reason("  プロバイダに確認中  ").unwrap(), "プロバイダに確認中");
        assert!(reason("   ").is_err());
        assert!(reason(&"あ".repeat(MAX_REASON_CHARS + 1)).is_err());
    }

    #[test]
    fn a_manual_verdict_is_a_finding_not_a_look_up_state() {
        assert!(may_record_by_hand(Verdict::NotExecuted));
        assert!(!may_record_by_hand(Verdict::InProgress));
        assert!(!may_record_by_hand(Verdict::LookupFailed));
    }
}
