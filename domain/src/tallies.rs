//! Which records the review counts where: the data layer reads the records as they are (`Tallies`), and these
//! rules turn them into the indicators' counts — which refusals are collisions, which audit events are outside
//! calls, errors, sends and failed reruns, how a stall is classed.
use crate::audit_action::AuditAction;
use crate::indicators::Counts;
use crate::names::named;
use chrono::{DateTime, Utc};

named! {
    /// Why a registration was refused, as the review counts it.
    pub enum RegistrationRefusal {
        /// It carried no process ID.
        MissingProcessId => "missing_process_id",
        /// Its Idempotency-Key had been used with another body (409).
        IdempotencyKeyMismatch => "idempotency_key_mismatch",
    }
}

/// The audit events the review counts: applied step outcomes and ended dispatches.
pub const COUNTED_ACTIONS: [AuditAction; 8] = [
    AuditAction::StepSucceeded,
    AuditAction::StepFailed,
    AuditAction::StepUnknown,
    AuditAction::RerunDispatched,
    AuditAction::RerunRefused,
    AuditAction::RerunEndpointGone,
    AuditAction::RerunFailed,
    AuditAction::RerunOutcomeUnknown,
];

/// A stall whose event was not recorded (older records) is counted under this name.
pub const UNCLASSIFIED: &str = "unclassified";

/// The records of one period as the data layer reads them, before any rule is applied.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Tallies {
    /// Refused registrations per refusal.
    pub refusals: Vec<(RegistrationRefusal, i64)>,
    /// Counted audit events per action (`COUNTED_ACTIONS`).
    pub actions: Vec<(AuditAction, i64)>,
    /// Look-ups made (not manual verdicts), those that failed, and steps whose look-up found several records.
    pub look_ups: i64,
    pub failed_look_ups: i64,
    pub steps_with_several_records: i64,
    /// Each decided request's submission and decision.
    pub decisions: Vec<(DateTime<Utc>, DateTime<Utc>)>,
    /// The event each stall was recorded with, if any.
    pub stalls: Vec<Option<String>>,
}

impl Counts {
    /// The indicators' counts of a period's records.
    pub fn of(tallies: Tallies) -> Counts {
        let mut counts = Counts::default();
        for (refusal, n) in tallies.refusals {
            match refusal {
                RegistrationRefusal::MissingProcessId => counts.missing_process_id += n,
                RegistrationRefusal::IdempotencyKeyMismatch => counts.idempotency_collisions += n,
            }
        }
        for (action, n) in tallies.actions {
            counts.count(action, n);
        }
        counts.outside_calls += tallies.look_ups;
        counts.outside_errors += tallies.failed_look_ups;
        counts.double_sends = tallies.steps_with_several_records;
        counts.approval_seconds =
            tallies.decisions.into_iter().map(|(asked, decided)| (decided - asked).num_seconds().max(0)).collect();
        for event in tallies.stalls {
            *counts.stalled_by_event.entry(event.unwrap_or_else(|| UNCLASSIFIED.into())).or_default() += 1;
        }
        counts
    }

    /// A step outcome is an outside call (a failed or unknown one an error, a success a send); a dispatch that
    /// ended other than sent is a failed rerun.
    fn count(&mut self, action: AuditAction, n: i64) {
        use AuditAction as A;
        match action {
            A::StepSucceeded => {
                self.sends += n;
                self.outside_calls += n;
            }
            A::StepFailed | A::StepUnknown => {
                self.outside_calls += n;
                self.outside_errors += n;
            }
            A::RerunDispatched => self.reruns_ended += n,
            A::RerunRefused | A::RerunEndpointGone | A::RerunFailed | A::RerunOutcomeUnknown => {
                self.reruns_ended += n;
                self.reruns_failed += n;
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::indicators::Indicator;
    use chrono::TimeZone;

    fn at(minute: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 12, 1, 9, minute, 0).unwrap()
    }

    #[test]
    fn a_refusal_without_process_id_and_a_key_used_with_another_body_count_apart() {
        let tallies = Tallies {
            refusals: vec![
                (RegistrationRefusal::MissingProcessId, 3),
                (RegistrationRefusal::IdempotencyKeyMismatch, 2),
            ],
            ..Tallies::default()
        };
        let counts = Counts::of(tallies);
        assert_eq!((counts.missing_process_id, counts.idempotency_collisions), (3, 2));
    }

    #[test]
    fn failed_and_unknown_outcomes_and_failed_look_ups_are_the_outside_errors_of_all_calls() {
        use AuditAction as A;
        let tallies = Tallies {
            actions: vec![(A::StepSucceeded, 6), (A::StepFailed, 1), (A::StepUnknown, 1)],
            look_ups: 2,
            failed_look_ups: 2,
            steps_with_several_records: 1,
            ..Tallies::default()
        };
        let counts = Counts::of(tallies);
        assert_eq!((counts.outside_errors, counts.outside_calls, counts.sends), (4, 10, 6));
        assert_eq!(counts.value(Indicator::OutsideApiErrorRate), Some(40.0));
        assert_eq!(counts.value(Indicator::DoubleSendRatio), Some(100.0 / 6.0));
    }

    #[test]
    fn every_ended_dispatch_but_a_sent_one_is_a_failed_rerun() {
        use AuditAction as A;
        let ended = [A::RerunRefused, A::RerunEndpointGone, A::RerunFailed, A::RerunOutcomeUnknown];
        let mut actions = vec![(A::RerunDispatched, 4)];
        actions.extend(ended.map(|a| (a, 1)));
        let counts = Counts::of(Tallies { actions, ..Tallies::default() });
        assert_eq!((counts.reruns_failed, counts.reruns_ended), (4, 8));
        assert_eq!(counts.value(Indicator::RerunErrorRate), Some(50.0));
    }

    #[test]
    fn only_the_counted_actions_count() {
        let others = AuditAction::ALL.iter().filter(|a| !COUNTED_ACTIONS.contains(a)).map(|a| (*a, 5)).collect();
        assert_eq!(Counts::of(Tallies { actions: others, ..Tallies::default() }), Counts::default());
        let counted = COUNTED_ACTIONS.iter().map(|a| (*a, 1)).collect();
        let counts = Counts::of(Tallies { actions: counted, ..Tallies::default() });
        assert_eq!((counts.outside_calls, counts.reruns_ended), (3, 5), "each counted action counts somewhere");
    }

    #[test]
    fn a_decision_takes_its_minutes_and_one_recorded_before_its_submission_takes_none() {
        let tallies = Tallies { decisions: vec![(at(0), at(30)), (at(10), at(5))], ..Tallies::default() };
        assert_eq!(Counts::of(tallies).approval_seconds, vec![1800, 0]);
    }

    #[test]
    fn a_stall_is_counted_under_its_event_and_one_without_under_unclassified() {
        let tallies = Tallies {
            stalls: vec![Some("rate_limited".into()), Some("rate_limited".into()), None],
            ..Tallies::default()
        };
        let counts = Counts::of(tallies);
        assert_eq!(counts.stalled_by_event.get("rate_limited"), Some(&2));
        assert_eq!(counts.stalled_by_event.get(UNCLASSIFIED), Some(&1));
        assert_eq!(counts.value(Indicator::Stalled), Some(3.0));
    }
}
