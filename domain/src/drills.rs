//! Drills: practise the bad mornings on a demo or drill database. An admin injects faults into the demo
//! outside systems for a chosen period; each fault stalls one practice operation with the matching one of the
//! ten events; afterwards a report shows, per fault, how long staff took from the stall to a decision, which
//! decision-table action they chose and whether it is one the table recommends. Drill operations are marked
//! and never count in the real indicators.
use super::audit_action::AuditAction;
use super::decision_table::Action;
use super::stall::StallEvent;
use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Fault {
    /// The order system refuses every call (401) for the period.
    CredentialsExpired,
    /// The AI service answers 429 with `Retry-After` for the period.
    RateLimited,
    /// The order system does the work, then the answer is lost on the way back.
    AnswerLost,
    /// The AI service's background jobs take hours for the period.
    SlowAiJob,
    /// A generation was asked to stop; whether it stopped is not known yet.
    CancelOnlyRequested,
    /// The AI service's completion webhook arrives twice.
    DuplicateWebhook,
    /// An older webhook arrives after a newer state was applied.
    StaleWebhook,
    /// The mail log finds nothing for the period: which proves nothing.
    LookupFindsNothing,
    /// Bulk reruns in stages: a group of orders stalled by an outage; their reruns are stored by the order system
    /// with another amount, so that a bulk rerun's canary fails on its content.
    CanaryOtherContent,
    /// The same group; the order system takes the first `FAILS_AFTER` reruns and answers 503 to the rest, so
    /// that the canary passes and the stage after it fails.
    FailsAfterCanary,
}

/// How many of a `FailsAfterCanary` group's reruns the order system takes before it fails: the default canary.
pub const FAILS_AFTER: i64 = 3;

impl Fault {
    pub const ALL: [Fault; 10] = [
        Fault::CredentialsExpired,
        Fault::RateLimited,
        Fault::AnswerLost,
        Fault::SlowAiJob,
        Fault::CancelOnlyRequested,
        Fault::DuplicateWebhook,
        Fault::StaleWebhook,
        Fault::LookupFindsNothing,
        Fault::CanaryOtherContent,
        Fault::FailsAfterCanary,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Fault::CredentialsExpired => "credentials_expired",
            Fault::RateLimited => "rate_limited",
            Fault::AnswerLost => "answer_lost",
            Fault::SlowAiJob => "slow_ai_job",
            Fault::CancelOnlyRequested => "cancel_only_requested",
            Fault::DuplicateWebhook => "duplicate_webhook",
            Fault::StaleWebhook => "stale_webhook",
            Fault::LookupFindsNothing => "lookup_finds_nothing",
            Fault::CanaryOtherContent => "canary_other_content",
            Fault::FailsAfterCanary => "fails_after_canary",
        }
    }

    pub fn parse(s: &str) -> Option<Fault> {
        Fault::ALL.into_iter().find(|f| f.as_str() == s)
    }

    /// The event the fault's practice operation stalls with.
    pub fn event(self) -> StallEvent {
        match self {
            Fault::CredentialsExpired => StallEvent::AuthExpired,
            Fault::RateLimited => StallEvent::RateLimited,
            Fault::AnswerLost => StallEvent::NoResponse,
            Fault::SlowAiJob => StallEvent::AiInProgress,
            Fault::CancelOnlyRequested => StallEvent::CancelRequested,
            Fault::DuplicateWebhook => StallEvent::DuplicateNotification,
            Fault::StaleWebhook => StallEvent::StaleNotification,
            Fault::LookupFindsNothing => StallEvent::ResultUnknown,
            Fault::CanaryOtherContent | Fault::FailsAfterCanary => StallEvent::TemporaryFailure,
        }
    }

    /// The workflow the practice operation runs in (the demo's order intake, or its monthly billing for mail).
    /// How many practice operations it stalls: one, or, for a bulk rerun's stages, enough for a canary, a stage
    /// after it that waits on its verdict and the rest (with the default stages: 3, then up to 5, then 20).
    pub fn practice_operations(self) -> usize {
        match self {
            Fault::CanaryOtherContent | Fault::FailsAfterCanary => 20,
            _ => 1,
        }
    }

    pub fn workflow(self) -> &'static str {
        match self {
            Fault::LookupFindsNothing => "monthly-billing",
            _ => "order-intake",
        }
    }
}

/// The decisions the table recommends for an event (its "next action" column); looking up alone is not one.
pub fn recommended(event: StallEvent) -> &'static [Action] {
    use Action::*;
    match event {
        StallEvent::AuthExpired | StallEvent::TemporaryFailure | StallEvent::PartialSuccess => &[RequestRerun],
        StallEvent::RateLimited => &[RequestRerun, Hold],
        StallEvent::NoResponse => &[ConfirmExisting],
        StallEvent::DuplicateNotification => &[ConfirmExisting, Resolve],
        StallEvent::StaleNotification => &[Resolve, Hold],
        StallEvent::AiInProgress | StallEvent::ResultUnknown => &[Hold],
        StallEvent::CancelRequested => &[Hold, RequestRerun],
    }
}

/// The decision an audited action by a person stands for, if it is one.
pub fn decision_of(action: &str) -> Option<Action> {
    Some(match AuditAction::parse(action)? {
        AuditAction::RerunRequestCreated => Action::RequestRerun,
        AuditAction::OperationHeld => Action::Hold,
        AuditAction::AiAttemptAdopted | AuditAction::StepFlagConfirmed | AuditAction::StepManualVerdict => {
            Action::ConfirmExisting
        }
        AuditAction::OperationResolved => Action::Resolve,
        _ => return None,
    })
}

/// A drill lasts at least a few minutes and at most a working day.
pub fn period(minutes: i64) -> Result<Duration, super::invalid::Invalid> {
    use super::invalid::{Invalid, Rule};
    match minutes {
        5..=480 => Ok(Duration::minutes(minutes)),
        _ => Err(Invalid::new(Rule::OutOfRange, "a drill lasts 5 to 480 minutes")),
    }
}

/// The columns of the drill report's CSV (their codes; the heading row says them in the reader's words).
pub const REPORT_CSV_COLUMNS: [&str; 10] = [
    "fault",
    "process_id",
    "expected_event",
    "event",
    "stalled_at",
    "decision",
    "decided_by",
    "decided_at",
    "seconds_to_decide",
    "matches_table",
];

/// One fault's line in the drill report.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReportLine {
    pub fault: Fault,
    pub process_id: String,
    pub expected_event: StallEvent,
    /// The event the sweeper gave it (`None`: not stalled yet).
    pub event: Option<StallEvent>,
    pub stalled_at: Option<DateTime<Utc>>,
    /// The first decision a person took after the stall, and when.
    pub decision: Option<Action>,
    pub decided_at: Option<DateTime<Utc>>,
    pub decided_by: Option<String>,
}

impl ReportLine {
    /// Seconds from the stall to the decision.
    pub fn seconds_to_decide(&self) -> Option<i64> {
        Some((self.decided_at? - self.stalled_at?).num_seconds().max(0))
    }

    /// Whether the decision is one the table recommends for the event staff saw.
    pub fn matches(&self) -> Option<bool> {
        Some(recommended(self.event?).contains(&self.decision?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn the_faults_cover_nine_of_the_ten_events_the_two_of_a_canary_an_outage() {
        let mut events: Vec<StallEvent> = Fault::ALL.iter().map(|f| f.event()).collect();
        events.sort_by_key(|e| e.as_str());
        events.dedup();
        assert_eq!(events.len(), 9);
        assert_eq!(Fault::FailsAfterCanary.event(), StallEvent::TemporaryFailure);
        for fault in Fault::ALL {
            assert_eq!(Fault::parse(fault.as_str()), Some(fault));
        }
    }

    #[test]
    fn the_report_tells_the_time_to_decide_and_whether_the_table_agrees() {
        let at = Utc.with_ymd_and_hms(2026, 11, 30, 9, 0, 0).unwrap();
        let line = ReportLine {
            fault: Fault::AnswerLost,
            process_id: "DRILL-1".into(),
            expected_event: StallEvent::NoResponse,
            event: Some(StallEvent::NoResponse),
            stalled_at: Some(at),
            decision: Some(Action::RequestRerun),
            decided_at: Some(at + Duration::seconds(95)),
            decided_by: Some("sato".into()),
        };
        assert_eq!(line.seconds_to_decide(), Some(95));
        assert_eq!(line.matches(), Some(false), "a lost answer is used, never resent");
        let right = ReportLine { decision: Some(Action::ConfirmExisting), ..line.clone() };
        assert_eq!(right.matches(), Some(true));
        let undecided = ReportLine { decision: None, decided_at: None, ..line };
        assert_eq!((undecided.seconds_to_decide(), undecided.matches()), (None, None));
    }

    #[test]
    fn decisions_are_read_from_audited_actions_and_a_look_up_is_not_one() {
        assert_eq!(decision_of(AuditAction::RerunRequestCreated.as_str()), Some(Action::RequestRerun));
        assert_eq!(decision_of(AuditAction::OperationHeld.as_str()), Some(Action::Hold));
        assert_eq!(decision_of(AuditAction::AiAttemptAdopted.as_str()), Some(Action::ConfirmExisting));
        assert_eq!(decision_of(AuditAction::StepReconciled.as_str()), None);
        assert_eq!(decision_of("test.unknown"), None, "an action outside the catalogue is no decision");
    }

    #[test]
    fn a_drill_lasts_five_minutes_to_a_working_day() {
        assert!(period(4).is_err() && period(481).is_err());
        assert_eq!(period(60), Ok(Duration::minutes(60)));
    }
}
