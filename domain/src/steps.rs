//! A step of an operation, and what a reported event does to it: the newest `seq` wins, a confirmed success
//! stays, and success sets the completion flag.
use super::operations::{StepEventType, StepState, is_newer, may_leave_success};
use super::reconciliation::Verdict;
use chrono::{DateTime, Utc};
use serde::Serialize;

const MAX_ERROR_CLASS_CHARS: usize = 64;
const MAX_ERROR_MESSAGE_CHARS: usize = 2_000;

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Step {
    pub id: i64,
    pub operation_id: i64,
    pub position: i64,
    pub name: String,
    pub idempotency_key: String,
    pub content_fingerprint: Option<String>,
    pub state: StepState,
    pub last_seq: Option<i64>,
    pub result_id: Option<String>,
    pub error_class: Option<String>,
    pub error_message: Option<String>,
    pub attempts: i64,
    pub started_at: Option<DateTime<Utc>>,
    pub last_heartbeat_at: Option<DateTime<Utc>>,
    /// The completion flag: the promise that the step's effect happened, which a rerun never repeats.
    pub completed_at: Option<DateTime<Utc>>,
    pub updated_at: DateTime<Utc>,
    pub content_json: Option<String>,
    pub latest_verdict: Option<Verdict>,
    /// Moved on by every change of the row: what a compare-and-set of the step is decided on.
    pub revision: i64,
}

/// What an integration reported about a step.
#[derive(Clone, Copy, Debug)]
pub struct Reported<'a> {
    pub kind: StepEventType,
    pub seq: i64,
    /// When it happened at the sender, if it said.
    pub at: Option<DateTime<Utc>>,
    pub result_id: Option<&'a str>,
    /// The error's class and message.
    pub error: Option<(&'a str, &'a str)>,
}

impl Step {
    /// A step as its operation's registration leaves it: not started, never attempted, no flag (its ids are the
    /// database's to give).
    pub fn registered(
        position: i64,
        name: String,
        idempotency_key: String,
        content: (Option<String>, Option<String>),
        at: DateTime<Utc>,
    ) -> Step {
        let (content_json, content_fingerprint) = content;
        Step {
            id: 0,
            operation_id: 0,
            position,
            name,
            idempotency_key,
            content_fingerprint,
            state: StepState::NotStarted,
            last_seq: None,
            result_id: None,
            error_class: None,
            error_message: None,
            attempts: 0,
            started_at: None,
            last_heartbeat_at: None,
            completed_at: None,
            updated_at: at,
            content_json,
            latest_verdict: None,
            revision: 0,
        }
    }

    /// The step after the report, or `None` when the report must not be applied: a late, repeated or
    /// contradicting report (answered `applied: false`, never an error, so that senders do not retry it).
    pub fn after(&self, report: &Reported, now: DateTime<Utc>) -> Option<Step> {
        if report.kind == StepEventType::Heartbeat {
            return self.beating(report, now);
        }
        let applies =
            is_newer(self.last_seq, report.seq) && may_leave_success(self.state, report.kind.resulting_state());
        applies.then(|| self.apply(report, now))
    }

    /// A heartbeat says the step is alive: it refreshes its liveness (and shows a step whose `started` was lost as
    /// started), but it is not one of the step's reports in order: its `seq` is not kept, so a later `succeeded`
    /// is never stale because of it, whatever `seq` the heartbeat carried. An ended step is not revived by it.
    fn beating(&self, report: &Reported, now: DateTime<Utc>) -> Option<Step> {
        if !matches!(self.state, StepState::NotStarted | StepState::Started) {
            return None;
        }
        let mut step = self.clone();
        step.state = StepState::Started;
        step.last_heartbeat_at = Some(report.at.unwrap_or(now));
        step.updated_at = now;
        Some(step)
    }

    fn apply(&self, report: &Reported, now: DateTime<Utc>) -> Step {
        let at = report.at.unwrap_or(now);
        let mut step = self.clone();
        step.state = report.kind.resulting_state();
        step.last_seq = Some(report.seq);
        step.updated_at = now;
        // An outcome reported without a `started` event still was an attempt.
        if self.state == StepState::NotStarted && report.kind != StepEventType::Started {
            step.attempts += 1;
        }
        match report.kind {
            StepEventType::Started => {
                step.attempts += 1;
                step.started_at = Some(at);
                step.last_heartbeat_at = Some(at);
            }
            StepEventType::Heartbeat => {} // see `beating`
            StepEventType::Succeeded => {
                step.result_id = report.result_id.map(str::to_string).or(step.result_id);
                step.completed_at = Some(at);
                step.error_class = None;
                step.error_message = None;
            }
            StepEventType::Failed | StepEventType::Unknown => {
                if let Some((class, message)) = report.error {
                    step.error_class = Some(class.chars().take(MAX_ERROR_CLASS_CHARS).collect());
                    step.error_message = Some(message.chars().take(MAX_ERROR_MESSAGE_CHARS).collect());
                }
            }
        }
        step
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn at(minute: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 12, 2, 9, minute, 0).unwrap()
    }

    fn step(state: StepState, last_seq: Option<i64>) -> Step {
        let registered = Step::registered(0, "send_invoice".into(), "inv-1".into(), (None, None), at(0));
        Step { id: 1, operation_id: 1, state, last_seq, ..registered }
    }

    fn report(kind: StepEventType, seq: i64) -> Reported<'static> {
        Reported { kind, seq, at: None, result_id: None, error: None }
    }

    #[test]
    fn a_success_sets_the_completion_flag_and_clears_the_error() {
        let mut failed = step(StepState::Failed, Some(1));
        failed.error_class = Some("timeout".into());
        let done = Reported { result_id: Some("INV-9"), at: Some(at(5)), ..report(StepEventType::Succeeded, 2) };
        let next = failed.after(&done, at(6)).unwrap();
        assert_eq!(next.state, StepState::Succeeded);
        assert_eq!(next.completed_at, Some(at(5)));
        assert_eq!(next.result_id.as_deref(), Some("INV-9"));
        assert_eq!(next.error_class, None);
        assert_eq!(next.updated_at, at(6));
    }

    #[test]
    fn a_late_or_repeated_report_is_not_applied() {
        let started = step(StepState::Started, Some(3));
        assert_eq!(started.after(&report(StepEventType::Failed, 3), at(1)), None);
        assert_eq!(started.after(&report(StepEventType::Failed, 2), at(1)), None);
    }

    #[test]
    fn a_confirmed_success_is_never_undone() {
        let done = step(StepState::Succeeded, Some(2));
        assert_eq!(done.after(&report(StepEventType::Failed, 9), at(1)), None);
        assert_eq!(done.after(&report(StepEventType::Started, 9), at(1)), None);
    }

    #[test]
    fn an_outcome_without_a_start_still_counts_as_an_attempt() {
        let fresh = step(StepState::NotStarted, None);
        let failed = Reported { error: Some(("timeout", "no answer")), ..report(StepEventType::Failed, 0) };
        let next = fresh.after(&failed, at(1)).unwrap();
        assert_eq!(next.attempts, 1);
        assert_eq!(next.error_message.as_deref(), Some("no answer"));
        assert_eq!(fresh.after(&report(StepEventType::Heartbeat, 0), at(1)).unwrap().attempts, 0);
    }

    #[test]
    fn a_heartbeat_refreshes_liveness_but_never_makes_a_later_report_stale() {
        let running = step(StepState::Started, Some(1));
        let beat = Reported { at: Some(at(3)), ..report(StepEventType::Heartbeat, 5) };
        let alive = running.after(&beat, at(3)).unwrap();
        assert_eq!((alive.last_heartbeat_at, alive.last_seq), (Some(at(3)), Some(1)), "liveness only");
        let done = alive.after(&report(StepEventType::Succeeded, 2), at(4)).unwrap();
        assert_eq!(done.state, StepState::Succeeded, "seq 2 after a heartbeat with seq 5 still counts");
        assert_eq!(done.after(&report(StepEventType::Heartbeat, 9), at(5)), None, "an ended step stays ended");
        let lost_start = step(StepState::NotStarted, None).after(&report(StepEventType::Heartbeat, 0), at(1)).unwrap();
        assert_eq!((lost_start.state, lost_start.last_seq), (StepState::Started, None));
    }

    #[test]
    fn an_overlong_error_is_cut_to_its_limits() {
        let long = "x".repeat(5_000);
        let failed = Reported { error: Some((&long, &long)), ..report(StepEventType::Failed, 1) };
        let next = step(StepState::Started, Some(0)).after(&failed, at(1)).unwrap();
        assert_eq!(next.error_class.unwrap().chars().count(), MAX_ERROR_CLASS_CHARS);
        assert_eq!(next.error_message.unwrap().chars().count(), MAX_ERROR_MESSAGE_CHARS);
    }
}
