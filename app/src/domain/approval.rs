//! Approval of a rerun request: by the owners (managers) of the operation's department, never by the
//! requester, N of M as the workflow says; bound to the plan, and valid for a limited time.
use chrono::Duration;

/// An approval is used within a day, or within the shortest key retention of the outside systems involved:
/// past that, the outside system may have forgotten the keys the rerun relies on.
pub fn validity(retention_days: impl IntoIterator<Item = i64>) -> Duration {
    let day = Duration::hours(24);
    retention_days.into_iter().map(Duration::days).fold(day, |shortest, d| shortest.min(d))
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// Four eyes: whoever asked for the rerun cannot approve it.
    Requester,
    /// Only a manager who owns the operation's department decides.
    NotOwner,
}

pub fn may_decide(owns_department: bool, is_requester: bool) -> Result<(), Refusal> {
    match (owns_department, is_requester) {
        (_, true) => Err(Refusal::Requester),
        (false, false) => Err(Refusal::NotOwner),
        (true, false) => Ok(()),
    }
}

/// Whether enough owners approved.
pub fn is_approved(approvals: i64, required: u32) -> bool {
    approvals >= i64::from(required.max(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validity_is_a_day_unless_a_key_is_kept_shorter() {
        assert_eq!(validity([30, 45]), Duration::hours(24));
        assert_eq!(validity([]), Duration::hours(24));
        assert!(validity([30, 0]) < Duration::hours(24));
    }

    #[test]
    fn the_requester_never_approves_and_only_owners_decide() {
        assert_eq!(may_decide(true, true), Err(Refusal::Requester));
        assert_eq!(may_decide(false, false), Err(Refusal::NotOwner));
        assert_eq!(may_decide(true, false), Ok(()));
    }

    #[test]
    fn n_of_m_approvals_are_needed() {
        assert!(!is_approved(1, 2));
        assert!(is_approved(2, 2));
        assert!(is_approved(1, 0), "at least one, whatever the configuration says");
    }
}
