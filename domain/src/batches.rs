//! Bulk reruns after an outage: one request, one checklist and one approval for many operations with the same
//! cause. Each operation keeps its own computed plan and its own rerun request; an operation whose plan is
//! blocked, whose checks fail or whose evidence changes drops out with its reason and never blocks the others.
//! Dispatches are spread at the batch's rate, so the outside system that just recovered is not flooded.
use super::dispatch::DispatchStatus;
use super::invalid::{Invalid, Rule};
use super::names::named;
use super::operations::OperationStatus;
use super::rerun_plan::BlockedBecause;
use super::rerun_request::{RequestEvent, RerunRequestStatus};
use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};

/// The most operations one batch may hold: enough for an outage's backlog, small enough to review.
pub const MAX_OPERATIONS: usize = 2000;

named! {
    pub enum BatchStatus {
        /// The outside systems are being asked about every selected operation.
        Previewing => "previewing",
        /// The dry run is ready: plans, totals and blocked operations; nothing requested yet.
        Preview => "preview",
        /// Requested: the checklist is being confirmed.
        Draft => "draft",
        PendingApproval => "pending_approval",
        /// Approved: dispatches go out at the batch's rate.
        Dispatching => "dispatching",
        Paused => "paused",
        /// Every rerun went out; some members have not ended yet (no report, or sent without an answer).
        Sent => "sent",
        /// Every member ended: succeeded, failed, or withdrawn.
        Completed => "completed",
        Cancelled => "cancelled",
        Rejected => "rejected",
        Expired => "expired",
    }
}

impl BatchStatus {
    /// Whether the batch has not ended yet.
    pub fn is_open(self) -> bool {
        !matches!(self, BatchStatus::Completed | BatchStatus::Cancelled | BatchStatus::Rejected | BatchStatus::Expired)
    }

    /// The move this event makes from this state, or a refusal.
    pub fn next(self, event: BatchEvent) -> Result<BatchStatus, BatchRefused> {
        use BatchEvent as E;
        use BatchStatus as S;
        match (self, event) {
            (S::Previewing, E::Previewed) => Ok(S::Preview),
            (S::Preview, E::Request) => Ok(S::Draft),
            (S::Draft, E::Submit) => Ok(S::PendingApproval),
            (S::PendingApproval, E::Approve) => Ok(S::Dispatching),
            (S::PendingApproval, E::Reject) => Ok(S::Rejected),
            (S::PendingApproval, E::Expire) => Ok(S::Expired),
            (S::Dispatching, E::Pause) => Ok(S::Paused),
            (S::Paused, E::Resume) => Ok(S::Dispatching),
            (S::Dispatching, E::AllSent) => Ok(S::Sent),
            (S::Sent, E::AllEnded) => Ok(S::Completed),
            // Submitted or approved with every member dropped out: nothing is left to ask for or to send.
            (S::Draft | S::PendingApproval, E::NothingLeft) => Ok(S::Cancelled),
            // Once everything went out there is nothing left to withdraw.
            (from, E::Cancel) if from.is_open() && from != S::Sent => Ok(S::Cancelled),
            (from, event) => Err(BatchRefused { from, event }),
        }
    }

    /// When the move to this state stamps the batch: submitted, or first decided by the owners.
    pub fn is_submission(self) -> bool {
        self == BatchStatus::PendingApproval
    }

    pub fn is_decision(self) -> bool {
        matches!(self, BatchStatus::Dispatching | BatchStatus::Rejected)
    }

    /// Whether its members' dispatches are in the outbox (a cancel withdraws the waiting ones; before, it ends
    /// the members' requests).
    pub fn is_after_approval(self) -> bool {
        matches!(self, BatchStatus::Dispatching | BatchStatus::Paused)
    }
}

named! {
    /// Where one selected operation stands in its batch.
    pub enum MemberState {
        /// Not looked up yet.
        Waiting => "waiting",
        /// Its plan is ready; nothing blocks it.
        Eligible => "eligible",
        /// A step's state, its operation's state or a failed look-up keeps it out.
        Blocked => "blocked",
        /// The outside systems show it executed: nothing to rerun.
        Done => "done",
        /// Its rerun request is part of the batch's request.
        Requested => "requested",
        /// It left the batch's request, with its reason.
        Dropped => "dropped",
    }
}

impl MemberState {
    /// The move this event makes from this state, or a refusal: a member is looked up once, requested from
    /// its preview, and drops out at most once.
    pub fn next(self, event: MemberEvent) -> Result<MemberState, MemberRefused> {
        use MemberEvent as E;
        use MemberState as S;
        match (self, event) {
            (S::Waiting, E::FoundEligible) => Ok(S::Eligible),
            (S::Waiting, E::FoundBlocked) => Ok(S::Blocked),
            (S::Waiting, E::FoundExecuted) => Ok(S::Done),
            (S::Eligible | S::Done, E::Request) => Ok(S::Requested),
            (S::Eligible | S::Done | S::Requested, E::Drop) => Ok(S::Dropped),
            (from, event) => Err(MemberRefused { from, event }),
        }
    }

    /// Whether it has (or had, before the request) a plan of its own.
    pub fn is_planned(self) -> bool {
        matches!(self, MemberState::Eligible | MemberState::Requested)
    }
}

/// What happens to one member of a bulk rerun.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemberEvent {
    FoundEligible,
    FoundBlocked,
    FoundExecuted,
    Request,
    Drop,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemberRefused {
    pub from: MemberState,
    pub event: MemberEvent,
}

impl std::fmt::Display for MemberRefused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "a member that is {} cannot take {:?}", self.from.as_str(), self.event)
    }
}

/// What happens to a bulk rerun.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BatchEvent {
    /// Every selected operation was looked up.
    Previewed,
    Request,
    Submit,
    Approve,
    Reject,
    Expire,
    Pause,
    Resume,
    Cancel,
    NothingLeft,
    /// The dispatcher has nothing left to send for it.
    AllSent,
    /// Every member ended (`Progress::has_ended`).
    AllEnded,
}

impl BatchEvent {
    pub const ALL: [BatchEvent; 12] = [
        BatchEvent::Previewed,
        BatchEvent::Request,
        BatchEvent::Submit,
        BatchEvent::Approve,
        BatchEvent::Reject,
        BatchEvent::Expire,
        BatchEvent::Pause,
        BatchEvent::Resume,
        BatchEvent::Cancel,
        BatchEvent::NothingLeft,
        BatchEvent::AllSent,
        BatchEvent::AllEnded,
    ];

    /// What the batch ending before its dispatch does to each requested member's rerun request.
    pub fn member_event(self) -> Option<RequestEvent> {
        match self {
            BatchEvent::Reject => Some(RequestEvent::Reject),
            BatchEvent::Expire => Some(RequestEvent::Expire),
            BatchEvent::Cancel | BatchEvent::NothingLeft => Some(RequestEvent::Withdraw),
            _ => None,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BatchRefused {
    pub from: BatchStatus,
    pub event: BatchEvent,
}

impl std::fmt::Display for BatchRefused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "the bulk rerun is {}: {:?} does not apply", self.from.as_str(), self.event)
    }
}

/// Why an operation is not (or no longer) part of the batch's request.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Reason {
    /// It is not stalled (any more): on hold, completed, or already in another request.
    NotStalled { status: String },
    /// A step's state forbids a rerun.
    Blocked { step: String, why: BlockedBecause },
    /// The outside systems could not be asked (e.g. its workflow is no longer configured).
    LookupError { message: String },
    /// One of the five checks does not hold for it.
    CheckFails { number: i64, evidence: super::checklist::Found },
    /// Its steps, what the outside systems say, or its workflow changed after its plan was made.
    EvidenceChanged,
    /// The outside systems show every unfinished step executed: its flags are confirmed, nothing is rerun.
    NothingToRerun { confirmed: Vec<String> },
}

/// Where one requested operation stands once the batch is approved.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Progress {
    /// Its batch waits for its approval: nothing is queued to send yet.
    AwaitingApproval,
    /// Approved and waiting for its turn.
    Waiting,
    /// The rerun was sent; the workflow has not finished it yet.
    Sent,
    /// The operation completed (or nothing was left to send).
    Succeeded,
    /// The rerun could not be sent, or the workflow stalled again.
    Failed,
    /// Sent without an answer: reconciliation settles it.
    Unknown,
    /// Withdrawn: the batch was cancelled, rejected or expired, or the operation's evidence changed.
    Withdrawn,
}

impl Progress {
    /// Whether the member's rerun has ended: nothing about it is still to come.
    pub fn has_ended(self) -> bool {
        matches!(self, Progress::Succeeded | Progress::Failed | Progress::Withdrawn)
    }

    pub const ALL: [Progress; 7] = [
        Progress::AwaitingApproval,
        Progress::Waiting,
        Progress::Sent,
        Progress::Succeeded,
        Progress::Failed,
        Progress::Unknown,
        Progress::Withdrawn,
    ];

    /// From the member's rerun request, its dispatch (if any) and its operation.
    pub fn of(request: RerunRequestStatus, dispatch: Option<DispatchStatus>, operation: OperationStatus) -> Progress {
        use RerunRequestStatus as R;
        match (request, dispatch) {
            (R::Succeeded, _) => Progress::Succeeded,
            (_, Some(DispatchStatus::Unknown)) => Progress::Unknown,
            (_, Some(DispatchStatus::Sent)) if operation == OperationStatus::Completed => Progress::Succeeded,
            (_, Some(DispatchStatus::Sent)) if operation == OperationStatus::Stalled => Progress::Failed,
            (_, Some(DispatchStatus::Sent)) => Progress::Sent,
            (R::Failed, _) => Progress::Failed,
            (R::Cancelled | R::Rejected | R::Expired, _) => Progress::Withdrawn,
            (R::Draft | R::PendingApproval, _) => Progress::AwaitingApproval,
            (R::Approved | R::Dispatched, _) => Progress::Waiting,
        }
    }
}

/// When the operation at `index` (0-based, in the batch's order) may be sent: one every `60 / per_minute`
/// seconds from `start`. The times are in the outbox, so the rate holds across instances and restarts.
pub fn send_at(start: DateTime<Utc>, index: usize, per_minute: u32) -> DateTime<Utc> {
    let spacing_ms = 60_000 / i64::from(per_minute.max(1));
    start + Duration::milliseconds(spacing_ms * index as i64)
}

/// The rate a batch dispatches at: the configured one, or slower when staff ask for it.
pub fn rate(asked: Option<u32>, configured: u32) -> Result<u32, Invalid> {
    match asked {
        None => Ok(configured),
        Some(r) if r == 0 || r > configured => {
            Err(Invalid::new(Rule::OutOfRange, format!("the rate is 1 to the configured {configured} per minute")))
        }
        Some(r) => Ok(r),
    }
}

/// N of M for the whole batch: as many approvals as the strictest workflow among its operations asks.
pub fn approvals_required(per_workflow: impl IntoIterator<Item = u32>) -> u32 {
    per_workflow.into_iter().max().unwrap_or(1).max(1)
}

/// Ticked process IDs as a form sends them: separated by commas, spaces or lines; each once, in order.
pub fn process_ids(text: &str) -> Vec<String> {
    let mut ids: Vec<String> = Vec::new();
    for id in text.split(|c: char| c == ',' || c.is_whitespace()).filter(|s| !s.is_empty()) {
        if !ids.iter().any(|known| known == id) {
            ids.push(id.to_string());
        }
    }
    ids
}

/// A form's `datetime-local` value (`2026-11-30T09:00`), read in the user's time zone; empty is no limit.
pub fn local_time(text: &str, zone: chrono_tz::Tz) -> Result<Option<DateTime<Utc>>, Invalid> {
    let text = text.trim();
    if text.is_empty() {
        return Ok(None);
    }
    let naive = chrono::NaiveDateTime::parse_from_str(text, "%Y-%m-%dT%H:%M")
        .or_else(|_| chrono::NaiveDateTime::parse_from_str(text, "%Y-%m-%dT%H:%M:%S"))
        .map_err(|_| Invalid::new(Rule::NotATime, format!("'{text}' is not a date and time (YYYY-MM-DDTHH:MM)")))?;
    naive
        .and_local_timezone(zone)
        .earliest()
        .map(|t| Some(t.with_timezone(&Utc)))
        .ok_or_else(|| Invalid::new(Rule::NotATime, format!("'{text}' does not exist in {zone}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn sends_are_spread_at_the_rate_from_the_start() {
        let start = Utc.with_ymd_and_hms(2026, 11, 30, 9, 0, 0).unwrap();
        assert_eq!(send_at(start, 0, 60), start);
        assert_eq!(send_at(start, 1, 60), start + Duration::seconds(1));
        assert_eq!(send_at(start, 10, 120), start + Duration::seconds(5));
        assert_eq!(send_at(start, 3, 0), start + Duration::minutes(3), "a zero rate is read as one a minute");
    }

    #[test]
    fn staff_may_slow_the_rate_but_never_exceed_the_configured_one() {
        assert_eq!(rate(None, 60), Ok(60));
        assert_eq!(rate(Some(10), 60), Ok(10));
        assert!(rate(Some(61), 60).is_err());
        assert!(rate(Some(0), 60).is_err());
    }

    #[test]
    fn progress_follows_the_request_the_dispatch_and_the_operation() {
        use DispatchStatus as D;
        use OperationStatus as O;
        use RerunRequestStatus as R;
        assert_eq!(Progress::of(R::Approved, Some(D::Pending), O::RerunPending), Progress::Waiting);
        assert_eq!(
            Progress::of(R::PendingApproval, None, O::RerunPending),
            Progress::AwaitingApproval,
            "nothing is queued before an approval"
        );
        assert_eq!(Progress::of(R::Dispatched, Some(D::Sent), O::Rerunning), Progress::Sent);
        assert_eq!(Progress::of(R::Dispatched, Some(D::Sent), O::Completed), Progress::Succeeded);
        assert_eq!(Progress::of(R::Dispatched, Some(D::Sent), O::Stalled), Progress::Failed);
        assert_eq!(Progress::of(R::Succeeded, Some(D::Sent), O::Completed), Progress::Succeeded);
        assert_eq!(Progress::of(R::Dispatched, Some(D::Unknown), O::Rerunning), Progress::Unknown);
        assert_eq!(Progress::of(R::Failed, Some(D::Failed), O::Stalled), Progress::Failed);
        assert_eq!(Progress::of(R::Cancelled, Some(D::Failed), O::Stalled), Progress::Withdrawn);
        assert_eq!(Progress::of(R::Expired, None, O::Stalled), Progress::Withdrawn);
    }

    #[test]
    fn the_strictest_workflow_sets_the_approvals_needed() {
        assert_eq!(approvals_required([1, 2, 1]), 2);
        assert_eq!(approvals_required([]), 1);
        assert_eq!(approvals_required([0]), 1);
    }

    #[test]
    fn statuses_read_back_and_only_ended_ones_are_closed() {
        for s in BatchStatus::ALL {
            assert_eq!(BatchStatus::parse(s.as_str()), Some(*s));
        }
        assert!(BatchStatus::Paused.is_open() && !BatchStatus::Completed.is_open());
    }

    #[test]
    fn a_member_is_looked_up_once_requested_from_its_preview_and_dropped_at_most_once() {
        use MemberEvent as E;
        use MemberState as S;
        assert_eq!(S::Waiting.next(E::FoundEligible).and_then(|s| s.next(E::Request)), Ok(S::Requested));
        assert_eq!(S::Requested.next(E::Drop), Ok(S::Dropped));
        assert!(S::Waiting.next(E::Request).is_err(), "requested before its look-up");
        assert!(S::Blocked.next(E::Request).is_err());
        assert!(S::Eligible.next(E::FoundBlocked).is_err(), "looked up twice");
        assert!(S::Dropped.next(E::Drop).is_err() && S::Dropped.next(E::Request).is_err());
        for state in S::ALL {
            assert_eq!(S::parse(state.as_str()), Some(*state));
        }
    }

    #[test]
    fn a_batch_is_sent_only_after_its_approval_completed_only_once_every_member_ended_and_an_ended_one_takes_nothing() {
        use BatchEvent as E;
        use BatchStatus as S;
        let mut status = S::Previewing;
        for event in [E::Previewed, E::Request, E::Submit, E::Approve, E::Pause, E::Resume, E::AllSent] {
            status = status.next(event).unwrap();
        }
        assert_eq!(status, S::Sent, "all sent is not completed");
        assert!(S::Sent.next(E::Cancel).is_err(), "nothing left to withdraw");
        assert!(S::Dispatching.next(E::AllEnded).is_err());
        assert_eq!(S::Sent.next(E::AllEnded), Ok(S::Completed));
        assert!(Progress::ALL.iter().filter(|p| p.has_ended()).count() == 3 && !Progress::Unknown.has_ended());
        for from in [S::Previewing, S::Preview, S::Draft, S::Paused] {
            assert!(from.next(E::Approve).is_err() && from.next(E::AllSent).is_err(), "{from}");
        }
        for from in [S::Completed, S::Cancelled, S::Rejected, S::Expired] {
            for event in E::ALL {
                assert!(from.next(event).is_err(), "{from} took {event:?}");
            }
        }
        assert_eq!(S::Paused.next(E::Cancel), Ok(S::Cancelled));
    }

    #[test]
    fn ticked_ids_are_read_once_each_in_order() {
        assert_eq!(process_ids("A-1, A-2\nA-1  A-3,,"), vec!["A-1", "A-2", "A-3"]);
        assert!(process_ids(" ").is_empty());
    }

    #[test]
    fn a_time_window_is_read_in_the_users_zone() {
        let tokyo = chrono_tz::Asia::Tokyo;
        assert_eq!(
            local_time("2026-11-30T09:00", tokyo).unwrap(),
            Some(Utc.with_ymd_and_hms(2026, 11, 30, 0, 0, 0).unwrap())
        );
        assert_eq!(local_time("", tokyo).unwrap(), None);
        assert!(local_time("yesterday", tokyo).is_err());
    }

    #[test]
    fn reasons_are_stored_as_tagged_json() {
        let reason = Reason::Blocked { step: "send_mail".into(), why: BlockedBecause::ResultUnknown };
        let text = serde_json::to_string(&reason).unwrap();
        assert_eq!(text, r#"{"kind":"blocked","step":"send_mail","why":"result_unknown"}"#);
        assert_eq!(serde_json::from_str::<Reason>(&text).unwrap(), reason);
    }
}
