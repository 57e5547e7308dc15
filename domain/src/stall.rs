//! When an operation counts as stalled, and which of the ten events of the decision table it is.
//!
//! The integration reports an error class with a failed or unknown step: one of `ErrorClass`, checked when it
//! arrives; each names the event of the decision table it stands for.
use super::names::named;
use super::operations::StepState;
use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StallEvent {
    AuthExpired,
    RateLimited,
    TemporaryFailure,
    NoResponse,
    DuplicateNotification,
    StaleNotification,
    PartialSuccess,
    AiInProgress,
    CancelRequested,
    ResultUnknown,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum FailureClass {
    SystemError,
    OutsideServiceOutage,
    DataInconsistency,
}

impl StallEvent {
    pub const ALL: [StallEvent; 10] = [
        StallEvent::AuthExpired,
        StallEvent::RateLimited,
        StallEvent::TemporaryFailure,
        StallEvent::NoResponse,
        StallEvent::DuplicateNotification,
        StallEvent::StaleNotification,
        StallEvent::PartialSuccess,
        StallEvent::AiInProgress,
        StallEvent::CancelRequested,
        StallEvent::ResultUnknown,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            StallEvent::AuthExpired => "auth_expired",
            StallEvent::RateLimited => "rate_limited",
            StallEvent::TemporaryFailure => "temporary_failure",
            StallEvent::NoResponse => "no_response",
            StallEvent::DuplicateNotification => "duplicate_notification",
            StallEvent::StaleNotification => "stale_notification",
            StallEvent::PartialSuccess => "partial_success",
            StallEvent::AiInProgress => "ai_in_progress",
            StallEvent::CancelRequested => "cancel_requested",
            StallEvent::ResultUnknown => "result_unknown",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|e| e.as_str() == s)
    }

    pub fn failure_class(self) -> FailureClass {
        match self {
            StallEvent::AuthExpired | StallEvent::PartialSuccess => FailureClass::SystemError,
            StallEvent::DuplicateNotification | StallEvent::StaleNotification => FailureClass::DataInconsistency,
            _ => FailureClass::OutsideServiceOutage,
        }
    }

    /// The event an error class reported by the integration stands for (classes stored before the list was
    /// checked, and `validation` or `other`, stand for none).
    fn from_error_class(class: &str) -> Option<Self> {
        ErrorClass::parse(class)?.event()
    }
}

named! {
    /// What went wrong with a step, as the integration reports it with a `failed` or `unknown` event. An unknown
    /// class is refused (422, naming these): a typo would otherwise hide the event it meant.
    // utoipa cannot read the names the macro passes to serde: the same names, said as the rule they follow.
    #[cfg_attr(feature = "ssr", derive(utoipa::ToSchema), schema(rename_all = "snake_case"))]
    pub enum ErrorClass {
        /// The outside system refused the credentials (401): they expired or were revoked.
        AuthExpired => "auth_expired",
        Unauthorized => "unauthorized",
        /// 429: too many calls.
        RateLimited => "rate_limited",
        /// 5xx, or the system said it was unavailable for now.
        ServerError => "server_error",
        Unavailable => "unavailable",
        Temporary => "temporary",
        /// No answer in time, or the connection closed before it came: whether it acted is not known.
        Timeout => "timeout",
        NoResponse => "no_response",
        /// A completion notification came twice, or an older one after a newer one.
        DuplicateNotification => "duplicate_notification",
        StaleNotification => "stale_notification",
        /// A background job (an AI generation) is still working.
        InProgress => "in_progress",
        /// A cancel was asked; whether it stopped is not known.
        CancelRequested => "cancel_requested",
        /// The call went out but its result (ID) never came back.
        ResultUnknown => "result_unknown",
        /// The outside system refused the input (4xx other than the above): a rerun will not mend it.
        Validation => "validation",
        /// Anything else.
        Other => "other",
    }
}

impl ErrorClass {
    /// The event of the decision table this class stands for, if any.
    pub fn event(self) -> Option<StallEvent> {
        use ErrorClass as C;
        Some(match self {
            C::AuthExpired | C::Unauthorized => StallEvent::AuthExpired,
            C::RateLimited => StallEvent::RateLimited,
            C::ServerError | C::Unavailable | C::Temporary => StallEvent::TemporaryFailure,
            C::Timeout | C::NoResponse => StallEvent::NoResponse,
            C::DuplicateNotification => StallEvent::DuplicateNotification,
            C::StaleNotification => StallEvent::StaleNotification,
            C::InProgress => StallEvent::AiInProgress,
            C::CancelRequested => StallEvent::CancelRequested,
            C::ResultUnknown => StallEvent::ResultUnknown,
            C::Validation | C::Other => return None,
        })
    }
}

impl FailureClass {
    pub const ALL: [FailureClass; 3] =
        [FailureClass::SystemError, FailureClass::OutsideServiceOutage, FailureClass::DataInconsistency];

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|c| c.as_str() == s)
    }

    /// The cause the fifth check offers first: the class most of the operations have (none when none has one).
    pub fn likely(classes: impl IntoIterator<Item = FailureClass>) -> Option<FailureClass> {
        let mut counts = [0usize; 3];
        for class in classes {
            counts[Self::ALL.iter().position(|c| *c == class).unwrap_or_default()] += 1;
        }
        let (most, count) = counts.iter().enumerate().max_by_key(|(i, n)| (**n, std::cmp::Reverse(*i)))?;
        (*count > 0).then_some(Self::ALL[most])
    }

    /// A cause's class as a form sends it: nothing (or an empty choice) is none; another word is refused.
    pub fn from_form(s: Option<&str>) -> Result<Option<Self>, crate::invalid::Invalid> {
        use crate::invalid::{Invalid, Rule};
        match s.filter(|c| !c.is_empty()) {
            None => Ok(None),
            Some(c) => Self::parse(c).map(Some).ok_or_else(|| Invalid::new(Rule::Unknown, "unknown cause class")),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            FailureClass::SystemError => "system_error",
            FailureClass::OutsideServiceOutage => "outside_service_outage",
            FailureClass::DataInconsistency => "data_inconsistency",
        }
    }
}

/// What the sweeper knows of one step.
#[derive(Clone, Debug)]
pub struct StepFacts {
    pub name: String,
    pub state: StepState,
    pub error_class: Option<String>,
    pub result_id: Option<String>,
    pub started_at: Option<DateTime<Utc>>,
    pub last_heartbeat_at: Option<DateTime<Utc>>,
    pub completed_at: Option<DateTime<Utc>>,
    pub deadline_seconds: u64,
    pub heartbeat_seconds: Option<u64>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stall {
    pub step: String,
    pub event: StallEvent,
    pub reason: StallReason,
}

/// Why the sweeper found a step stalled, as facts. Its English `text` is the audit event's reason (kept in the
/// trail and its exports) and reads back with `parse`; the pages say it in the reader's language.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum StallReason {
    Failed { error_class: Option<String> },
    UnknownOutcome,
    NoHeartbeat { seconds: u64 },
    RunningPastDeadline { seconds: u64 },
    NoAnswerWithinDeadline { seconds: u64 },
    NotStartedWithin { seconds: u64 },
}

impl StallReason {
    pub fn text(&self) -> String {
        match self {
            StallReason::Failed { error_class } => {
                format!("failed ({})", error_class.as_deref().unwrap_or("no error class"))
            }
            StallReason::UnknownOutcome => "reported an unknown outcome".into(),
            StallReason::NoHeartbeat { seconds } => format!("no heartbeat for {seconds} s"),
            StallReason::RunningPastDeadline { seconds } => format!("still running past its {seconds} s deadline"),
            StallReason::NoAnswerWithinDeadline { seconds } => format!("no answer within its {seconds} s deadline"),
            StallReason::NotStartedWithin { seconds } => format!("not started within {seconds} s"),
        }
    }

    /// The facts of a reason written by `text` (by this version or an earlier one); `None` for any other text.
    pub fn parse(text: &str) -> Option<StallReason> {
        let seconds = |prefix: &str, suffix: &str| text.strip_prefix(prefix)?.strip_suffix(suffix)?.parse::<u64>().ok();
        if let Some(class) = text.strip_prefix("failed (").and_then(|t| t.strip_suffix(')')) {
            let error_class = (class != "no error class").then(|| class.to_string());
            return Some(StallReason::Failed { error_class });
        }
        if text == "reported an unknown outcome" {
            return Some(StallReason::UnknownOutcome);
        }
        let reason = if let Some(seconds) = seconds("no heartbeat for ", " s") {
            StallReason::NoHeartbeat { seconds }
        } else if let Some(seconds) = seconds("still running past its ", " s deadline") {
            StallReason::RunningPastDeadline { seconds }
        } else if let Some(seconds) = seconds("no answer within its ", " s deadline") {
            StallReason::NoAnswerWithinDeadline { seconds }
        } else {
            StallReason::NotStartedWithin { seconds: seconds("not started within ", " s")? }
        };
        Some(reason)
    }
}

/// The first step, in workflow order, that makes the operation stalled — or `None` while all is well.
pub fn detect_stall(steps: &[StepFacts], registered_at: DateTime<Utc>, now: DateTime<Utc>) -> Option<Stall> {
    let mut previous_done_at = Some(registered_at);
    for step in steps {
        let stall = |event: StallEvent, reason: StallReason| Some(Stall { step: step.name.clone(), event, reason });
        let deadline = Duration::seconds(step.deadline_seconds as i64);
        match step.state {
            StepState::Succeeded => {
                previous_done_at = step.completed_at;
                continue;
            }
            StepState::Failed => {
                let class = step.error_class.as_deref().unwrap_or("");
                let event = StallEvent::from_error_class(class).unwrap_or(StallEvent::TemporaryFailure);
                let error_class = (!class.is_empty()).then(|| class.to_string());
                return stall(event, StallReason::Failed { error_class });
            }
            StepState::Unknown => {
                let class = step.error_class.as_deref();
                let event = class.and_then(StallEvent::from_error_class).unwrap_or(match step.result_id {
                    Some(_) => StallEvent::NoResponse,
                    None => StallEvent::ResultUnknown,
                });
                return stall(event, StallReason::UnknownOutcome);
            }
            StepState::Started => {
                let started = step.started_at.unwrap_or(registered_at);
                let past_deadline = now > started + deadline;
                match step.heartbeat_seconds {
                    // A long job that beats: past its deadline it goes to a person; silent, it is lost.
                    Some(beat) => {
                        let last_sign = step.last_heartbeat_at.unwrap_or(started);
                        if now > last_sign + Duration::seconds(beat as i64) {
                            return stall(StallEvent::NoResponse, StallReason::NoHeartbeat { seconds: beat });
                        }
                        if past_deadline {
                            let seconds = step.deadline_seconds;
                            return stall(StallEvent::AiInProgress, StallReason::RunningPastDeadline { seconds });
                        }
                    }
                    None if past_deadline => {
                        let seconds = step.deadline_seconds;
                        return stall(StallEvent::NoResponse, StallReason::NoAnswerWithinDeadline { seconds });
                    }
                    None => {}
                }
                return None;
            }
            StepState::NotStarted => {
                // The previous step finished (or the operation was registered) and this one never started.
                let waited_since = previous_done_at?;
                if now > waited_since + deadline {
                    let event = if steps.iter().any(|s| s.state == StepState::Succeeded) {
                        StallEvent::PartialSuccess
                    } else {
                        StallEvent::NoResponse
                    };
                    return stall(event, StallReason::NotStartedWithin { seconds: step.deadline_seconds });
                }
                return None;
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn the_likely_cause_is_the_class_most_operations_have() {
        use FailureClass::*;
        assert_eq!(FailureClass::likely([OutsideServiceOutage; 6]), Some(OutsideServiceOutage));
        assert_eq!(FailureClass::likely([SystemError, DataInconsistency, DataInconsistency]), Some(DataInconsistency));
        assert_eq!(FailureClass::likely([DataInconsistency, SystemError]), Some(SystemError), "a tie: the first");
        assert_eq!(FailureClass::likely([]), None);
    }

    fn t(minutes: i64) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 11, 30, 9, 0, 0).unwrap() + Duration::minutes(minutes)
    }

    fn step(name: &str, state: StepState) -> StepFacts {
        StepFacts {
            name: name.into(),
            state,
            error_class: None,
            result_id: None,
            started_at: None,
            last_heartbeat_at: None,
            completed_at: None,
            deadline_seconds: 600,
            heartbeat_seconds: None,
        }
    }

    fn failed(class: &str) -> StepFacts {
        StepFacts { error_class: Some(class.into()), started_at: Some(t(0)), ..step("a", StepState::Failed) }
    }

    #[test]
    fn each_reported_error_class_maps_to_its_event_and_failure_class() {
        let cases = [
            ("auth_expired", StallEvent::AuthExpired, FailureClass::SystemError),
            ("rate_limited", StallEvent::RateLimited, FailureClass::OutsideServiceOutage),
            ("server_error", StallEvent::TemporaryFailure, FailureClass::OutsideServiceOutage),
            ("timeout", StallEvent::NoResponse, FailureClass::OutsideServiceOutage),
            ("duplicate_notification", StallEvent::DuplicateNotification, FailureClass::DataInconsistency),
            ("stale_notification", StallEvent::StaleNotification, FailureClass::DataInconsistency),
            ("cancel_requested", StallEvent::CancelRequested, FailureClass::OutsideServiceOutage),
            ("in_progress", StallEvent::AiInProgress, FailureClass::OutsideServiceOutage),
        ];
        for (class, event, failure) in cases {
            let stall = detect_stall(&[failed(class)], t(0), t(1)).unwrap();
            assert_eq!((stall.event, stall.event.failure_class()), (event, failure), "{class}");
        }
    }

    #[test]
    fn an_unrecognised_failure_is_a_temporary_failure_to_look_up() {
        assert_eq!(detect_stall(&[failed("teapot")], t(0), t(1)).unwrap().event, StallEvent::TemporaryFailure);
    }

    #[test]
    fn an_unknown_outcome_without_a_result_id_is_result_unknown() {
        let unknown = step("a", StepState::Unknown);
        assert_eq!(detect_stall(std::slice::from_ref(&unknown), t(0), t(1)).unwrap().event, StallEvent::ResultUnknown);
        let with_id = StepFacts { result_id: Some("resp_1".into()), ..unknown };
        assert_eq!(detect_stall(&[with_id], t(0), t(1)).unwrap().event, StallEvent::NoResponse);
    }

    #[test]
    fn a_started_step_stalls_only_after_its_deadline() {
        let started = StepFacts { started_at: Some(t(0)), ..step("a", StepState::Started) };
        assert_eq!(detect_stall(std::slice::from_ref(&started), t(0), t(9)), None);
        assert_eq!(detect_stall(&[started], t(0), t(11)).unwrap().event, StallEvent::NoResponse);
    }

    #[test]
    fn a_beating_ai_job_past_its_deadline_is_in_progress_and_a_silent_one_is_no_response() {
        let ai = StepFacts {
            started_at: Some(t(0)),
            last_heartbeat_at: Some(t(14)),
            heartbeat_seconds: Some(120),
            ..step("ai_summary", StepState::Started)
        };
        assert_eq!(detect_stall(std::slice::from_ref(&ai), t(0), t(15)).unwrap().event, StallEvent::AiInProgress);
        assert_eq!(detect_stall(&[ai], t(0), t(17)).unwrap().event, StallEvent::NoResponse);
    }

    #[test]
    fn the_order_registered_and_the_summary_never_started_is_partial_success() {
        let registered = StepFacts { completed_at: Some(t(1)), ..step("register_order", StepState::Succeeded) };
        let summary = step("ai_summary", StepState::NotStarted);
        assert_eq!(detect_stall(&[registered.clone(), summary.clone()], t(0), t(10)), None);
        let stall = detect_stall(&[registered, summary], t(0), t(12)).unwrap();
        assert_eq!((stall.step.as_str(), stall.event), ("ai_summary", StallEvent::PartialSuccess));
        assert_eq!(stall.event.failure_class(), FailureClass::SystemError);
    }

    #[test]
    fn nothing_started_long_after_registration_is_no_response() {
        let first = step("register_order", StepState::NotStarted);
        assert_eq!(detect_stall(&[first], t(0), t(11)).unwrap().event, StallEvent::NoResponse);
    }

    #[test]
    fn every_event_name_reads_back() {
        for event in StallEvent::ALL {
            assert_eq!(StallEvent::parse(event.as_str()), Some(event));
        }
    }
}
