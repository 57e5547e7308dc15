//! Bulk reruns in stages (canaries): a few operations first, then wider stages, each at the batch's rate. A stage
//! passes only on proof — every rerun of it reported done by the integration **and**, asked again once the
//! outside systems had time to settle, each re-run step shown executed with matching content; anything else
//! (unknown, not found, another content, a failure, no report within the step's deadline) fails it, and a
//! failed stage stops the batch before the next one.
use super::batches::Progress;
use super::invalid::{Invalid, Rule};
use super::names::named;
use super::reconciliation::Verdict;
use serde::{Deserialize, Serialize};

named! {
    /// What a failed stage does besides pausing the batch.
    pub enum OnFailure {
        /// The batch pauses before its next stage; a manager decides whether it goes on.
        Pause => "pause",
        /// It also trips the workflow's stop switch, so that no rerun reaches that outside system meanwhile.
        PauseAndStop => "pause_and_stop",
    }
}

named! {
    /// How a stage ended.
    pub enum StageOutcome {
        /// Every rerun proven at the outside systems: the next stage starts.
        Passed => "passed",
        /// Something was not proven: the batch stopped before its next stage.
        Failed => "failed",
    }
}

/// `[workflow.canary]`: the stages of a workflow's bulk reruns. Part of a bulk rerun's plan: changing them after
/// the approval voids it, as any change of the plan does.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CanaryConfig {
    /// The canary's size: this many operations, or `percent` of the batch if that is more.
    pub size: u32,
    pub percent: u32,
    /// Each later stage ends at this percentage of the batch (the last one at 100: the rest).
    pub stages: Vec<u32>,
    /// How long the outside systems are given before they are asked again about a stage's reruns.
    pub settle_seconds: u32,
    pub on_failure: OnFailure,
}

impl Default for CanaryConfig {
    fn default() -> Self {
        CanaryConfig {
            size: 3,
            percent: 5,
            stages: vec![25, 100],
            settle_seconds: 60,
            on_failure: OnFailure::PauseAndStop,
        }
    }
}

impl CanaryConfig {
    /// How many of a batch of `n` have gone out by the end of each stage: strictly increasing, the last `n`.
    pub fn stage_ends(&self, n: usize) -> Vec<usize> {
        let share = |percent: u32| (n * percent as usize).div_ceil(100);
        let canary = (self.size as usize).max(share(self.percent)).min(n);
        let mut ends: Vec<usize> = Vec::new();
        for end in std::iter::once(canary).chain(self.stages.iter().map(|p| share(*p).min(n))).chain([n]) {
            if end > ends.last().copied().unwrap_or(0) {
                ends.push(end);
            }
        }
        ends
    }

    /// The stage of the rerun sent at `turn` (0-based) of a batch whose stages end at `ends`.
    pub fn stage_of(ends: &[usize], turn: usize) -> usize {
        ends.iter().position(|end| turn < *end).unwrap_or(ends.len().saturating_sub(1))
    }

    /// A batch of several workflows runs in the strictest of their stages: the smallest canary, every stage
    /// any of them asks for, the longest settle time, and the stop switch if any trips it. `None`: none of
    /// them runs in stages.
    pub fn strictest<'c>(configs: impl IntoIterator<Item = Option<&'c CanaryConfig>>) -> Option<CanaryConfig> {
        configs.into_iter().flatten().cloned().reduce(|a, b| {
            let mut stages: Vec<u32> = a.stages.iter().chain(&b.stages).copied().collect();
            stages.sort_unstable();
            stages.dedup();
            let on_failure = if a.on_failure == OnFailure::PauseAndStop || b.on_failure == OnFailure::PauseAndStop {
                OnFailure::PauseAndStop
            } else {
                OnFailure::Pause
            };
            CanaryConfig {
                size: a.size.min(b.size),
                percent: a.percent.min(b.percent),
                stages,
                settle_seconds: a.settle_seconds.max(b.settle_seconds),
                on_failure,
            }
        })
    }

    /// What `rerun-gate.toml` may say: a canary of at least one, percentages of the batch rising to 100, a
    /// settle time of at most a day.
    pub fn validate(&self) -> Result<(), Invalid> {
        let rising = self.stages.windows(2).all(|w| w[0] < w[1]);
        let problem = if self.size == 0 {
            "the canary's size is at least 1"
        } else if !(1..=100).contains(&self.percent) {
            "the canary's percent is 1 to 100"
        } else if !rising || self.stages.iter().any(|p| !(1..=100).contains(p)) {
            "stages are percentages of the batch (1 to 100), each larger than the one before"
        } else if self.settle_seconds > 86_400 {
            "settle_seconds is at most a day (86400)"
        } else {
            return Ok(());
        };
        Err(Invalid::new(Rule::OutOfRange, problem))
    }
}

/// What the integration reported of one rerun of a stage.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Reported {
    NotYet,
    Done,
    Failed,
}

impl Reported {
    /// From the member's progress and whether anything went wrong that someone reported (a step's error, or a
    /// dispatch that could not be sent): a rerun the sweeper stalled for silence was never reported at all. `None`:
    /// it was withdrawn before it was sent, so it is not part of the stage's proof.
    pub fn of(progress: Progress, error_reported: bool) -> Option<Reported> {
        match progress {
            Progress::Succeeded => Some(Reported::Done),
            Progress::Failed if error_reported => Some(Reported::Failed),
            Progress::Withdrawn => None,
            Progress::Failed | Progress::AwaitingApproval | Progress::Waiting | Progress::Sent | Progress::Unknown => {
                Some(Reported::NotYet)
            }
        }
    }
}

/// One rerun of a stage, as the stage's verdict needs it: the integration's report, the outside systems'
/// verdicts on each re-run step once asked again after the settle time (none yet: not asked), and whether the
/// step's deadline passed without a report.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StageMember {
    pub process_id: String,
    pub reported: Reported,
    pub verified: Option<Vec<Verdict>>,
    pub past_deadline: bool,
}

/// Why a rerun of a stage failed it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StageFailure {
    /// The integration reported the rerun failed.
    RerunFailed,
    /// No report within the step's deadline.
    NoReport,
    /// The outside system stores other content than the step's.
    ContentMismatch,
    /// The outside system has no record of the re-run step.
    NotFound,
    /// The outside system could not say (unknown, still in progress past the deadline, the look-up failed, or a
    /// record whose content was not compared).
    Unproven,
}

/// Where a stage stands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StageVerdict {
    /// Some reruns are not reported or not verified yet.
    Waiting,
    Passed,
    /// Each failing rerun with why.
    Failed(Vec<(String, StageFailure)>),
}

fn failure(member: &StageMember) -> Option<StageFailure> {
    match member.reported {
        Reported::Failed => return Some(StageFailure::RerunFailed),
        Reported::NotYet if member.past_deadline => return Some(StageFailure::NoReport),
        _ => {}
    }
    let verdicts = member.verified.as_ref()?;
    let worst = |v: &Verdict| match v {
        Verdict::Executed => None,
        Verdict::ExecutedMismatch => Some(StageFailure::ContentMismatch),
        Verdict::NotExecuted => Some(StageFailure::NotFound),
        Verdict::InProgress if !member.past_deadline => None,
        Verdict::InProgress | Verdict::Unknown | Verdict::LookupFailed | Verdict::ExecutedNotCompared => {
            Some(StageFailure::Unproven)
        }
    };
    verdicts.iter().find_map(worst)
}

/// The stage's verdict: passed only when every rerun was reported done and every re-run step proven executed
/// with matching content (a step no outside system can be asked about rests on the report alone); failed as
/// soon as one rerun shows anything else, or when nothing of the stage was sent (nothing was proven).
pub fn stage_verdict(members: &[StageMember]) -> StageVerdict {
    if members.is_empty() {
        return StageVerdict::Failed(Vec::new());
    }
    let failed: Vec<(String, StageFailure)> =
        members.iter().filter_map(|m| failure(m).map(|f| (m.process_id.clone(), f))).collect();
    if !failed.is_empty() {
        return StageVerdict::Failed(failed);
    }
    let proven = |m: &StageMember| {
        m.reported == Reported::Done && m.verified.as_ref().is_some_and(|v| v.iter().all(|v| *v == Verdict::Executed))
    };
    if members.iter().all(proven) { StageVerdict::Passed } else { StageVerdict::Waiting }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn member(reported: Reported, verified: Option<&[Verdict]>, past_deadline: bool) -> StageMember {
        StageMember { process_id: "ORD-1".into(), reported, verified: verified.map(<[Verdict]>::to_vec), past_deadline }
    }

    #[test]
    fn the_canary_is_three_or_five_percent_then_a_quarter_then_the_rest() {
        let stages = CanaryConfig::default();
        assert_eq!(stages.stage_ends(1000), vec![50, 250, 1000]);
        assert_eq!(stages.stage_ends(40), vec![3, 10, 40]);
        assert_eq!(stages.stage_ends(8), vec![3, 8], "a quarter of 8 is within the canary");
        assert_eq!(stages.stage_ends(2), vec![2]);
        assert_eq!(stages.stage_ends(0), Vec::<usize>::new());
    }

    #[test]
    fn a_stage_passes_only_when_every_rerun_is_reported_done_and_proven_executed_with_its_content() {
        let proven = member(Reported::Done, Some(&[Verdict::Executed, Verdict::Executed]), false);
        assert_eq!(stage_verdict(&[proven.clone(), proven.clone()]), StageVerdict::Passed);
        let unverified = member(Reported::Done, None, false);
        assert_eq!(stage_verdict(&[proven.clone(), unverified]), StageVerdict::Waiting);
        let unreported = member(Reported::NotYet, None, false);
        assert_eq!(stage_verdict(&[proven, unreported]), StageVerdict::Waiting);
        assert_eq!(stage_verdict(&[]), StageVerdict::Failed(Vec::new()), "an empty stage proves nothing");
        let no_outside_system = member(Reported::Done, Some(&[]), false);
        assert_eq!(stage_verdict(&[no_outside_system]), StageVerdict::Passed, "the report alone");
    }

    #[test]
    fn each_rerun_belongs_to_the_stage_its_turn_falls_in() {
        let ends = [3, 10, 40];
        let stages: Vec<usize> = [0, 2, 3, 9, 10, 39, 45].iter().map(|t| CanaryConfig::stage_of(&ends, *t)).collect();
        assert_eq!(stages, vec![0, 0, 1, 1, 2, 2, 2]);
    }

    #[test]
    fn several_workflows_run_in_the_strictest_of_their_stages() {
        let loose = CanaryConfig {
            size: 10,
            stages: vec![50, 100],
            settle_seconds: 5,
            on_failure: OnFailure::Pause,
            ..CanaryConfig::default()
        };
        let strict = CanaryConfig::default();
        let both = CanaryConfig::strictest([Some(&loose), None, Some(&strict)]).unwrap();
        assert_eq!((both.size, both.stages.clone(), both.settle_seconds), (3, vec![25, 50, 100], 60));
        assert_eq!(both.on_failure, OnFailure::PauseAndStop);
        assert_eq!(CanaryConfig::strictest([None, None]), None, "no workflow runs in stages");
    }

    #[test]
    fn a_configured_canary_is_at_least_one_with_rising_percentages() {
        assert!(CanaryConfig::default().validate().is_ok());
        let bad = |c: CanaryConfig| c.validate().unwrap_err().to_string();
        assert!(bad(CanaryConfig { size: 0, ..CanaryConfig::default() }).contains("at least 1"));
        assert!(bad(CanaryConfig { stages: vec![50, 25], ..CanaryConfig::default() }).contains("larger"));
        assert!(bad(CanaryConfig { stages: vec![150], ..CanaryConfig::default() }).contains("1 to 100"));
        assert!(bad(CanaryConfig { settle_seconds: 90_000, ..CanaryConfig::default() }).contains("a day"));
    }

    #[test]
    fn a_rerun_stalled_for_silence_was_never_reported_and_a_withdrawn_one_proves_nothing() {
        assert_eq!(Reported::of(Progress::Failed, false), Some(Reported::NotYet));
        assert_eq!(Reported::of(Progress::Failed, true), Some(Reported::Failed));
        assert_eq!(Reported::of(Progress::Succeeded, false), Some(Reported::Done));
        assert_eq!(Reported::of(Progress::Withdrawn, true), None);
        assert_eq!(Reported::of(Progress::Sent, true), Some(Reported::NotYet), "an error may be the one it answers");
        assert_eq!(Reported::of(Progress::Unknown, true), Some(Reported::NotYet), "no answer is no report");
    }

    #[test]
    fn anything_but_proof_fails_the_stage_with_its_reason() {
        let cases = [
            (member(Reported::Failed, None, false), StageFailure::RerunFailed),
            (member(Reported::NotYet, None, true), StageFailure::NoReport),
            (member(Reported::Done, Some(&[Verdict::ExecutedMismatch]), false), StageFailure::ContentMismatch),
            (member(Reported::Done, Some(&[Verdict::Executed, Verdict::NotExecuted]), false), StageFailure::NotFound),
            (member(Reported::Done, Some(&[Verdict::Unknown]), false), StageFailure::Unproven),
            (member(Reported::Done, Some(&[Verdict::ExecutedNotCompared]), false), StageFailure::Unproven),
            (member(Reported::Done, Some(&[Verdict::InProgress]), true), StageFailure::Unproven),
        ];
        for (m, why) in cases {
            assert_eq!(
                stage_verdict(std::slice::from_ref(&m)),
                StageVerdict::Failed(vec![("ORD-1".into(), why)]),
                "{m:?}"
            );
        }
        let still_working = member(Reported::Done, Some(&[Verdict::InProgress]), false);
        assert_eq!(stage_verdict(&[still_working]), StageVerdict::Waiting);
    }
}
