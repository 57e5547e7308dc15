//! The rerun plan: computed from the steps' completion flags and verdicts, never typed. Only steps that are
//! not completed and that the outside system proves were not executed are rerun, with their original
//! idempotency keys; executed steps get their flag confirmed instead; every doubt blocks the request.
use super::canonical_json::to_canonical_string;
use super::reconciliation::Verdict;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::json;
use sha2::{Digest, Sha256};

/// What the plan needs to know of one step.
#[derive(Clone, Debug, PartialEq)]
pub struct StepFacts {
    pub name: String,
    pub idempotency_key: String,
    pub content_fingerprint: Option<String>,
    pub completed: bool,
    pub verdict: Option<Verdict>,
    pub external_id: Option<String>,
    /// A step without a connector and without side effect changes nothing outside: it can simply run again.
    pub checked_outside: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct PlannedStep {
    pub name: String,
    pub idempotency_key: String,
    pub content_fingerprint: Option<String>,
}

/// What the approval is bound to: if any of it changes before the dispatch, the approval is void.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct RerunPlan {
    pub steps: Vec<PlannedStep>,
    pub workflow_version: String,
    /// SHA-256 over every step's verdict and external ID at planning time.
    pub verdicts_hash: String,
    /// Left out because the outside system holds their key, though nothing of what ran was compared with the
    /// step: the request is submitted only once a person has confirmed each on it (`judged`); the flag is set
    /// when the request is approved and sent.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub on_key_alone: Vec<String>,
    /// The people's judgments the plan rests on: who confirmed a step left out on the key alone, when, and what
    /// they compared. They belong to this request alone: a withdrawn request's judgment sets no flag.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub judged: Vec<Judgment>,
    /// Each step's facts as they were when the plan was bound, so that a change can be named step by step
    /// (plans bound before these were kept have none: their change is only `Evidence`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub bound_to: Vec<BoundStep>,
}

/// A person's confirmation, on one request, that what ran at the outside system for a step left out on the key
/// alone is what was meant.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct Judgment {
    pub step: String,
    pub by: i64,
    pub by_name: String,
    pub at: DateTime<Utc>,
    /// What they compared, in their words.
    pub comment: String,
}

/// What the plan knew of one step: the outside system's verdict and record, and the completion flag.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct StepSnapshot {
    pub verdict: Option<Verdict>,
    pub external_id: Option<String>,
    pub completed: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct BoundStep {
    pub step: String,
    #[serde(flatten)]
    pub state: StepSnapshot,
}

impl RerunPlan {
    /// Bound anew to the facts as they are (a person's confirmation on the key alone became one of them).
    pub fn rebind(&mut self, facts: &[StepFacts]) {
        self.verdicts_hash = verdicts_hash(facts);
        self.bound_to = facts.iter().map(|s| BoundStep { step: s.name.clone(), state: s.state() }).collect();
    }
}

impl StepFacts {
    fn state(&self) -> StepSnapshot {
        StepSnapshot { verdict: self.verdict, external_id: self.external_id.clone(), completed: self.completed }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Blocked {
    pub step: String,
    pub why: BlockedBecause,
}

/// Why a step cannot be rerun yet (the pages put it into words).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BlockedBecause {
    /// The outside system has not been asked yet.
    NotLookedUp,
    /// Nobody can prove that it did not run.
    ResultUnknown,
    /// The outside system is still working on it.
    StillInProgress,
    /// It ran with other content: a data inconsistency, never rerun.
    ContentMismatch,
    /// The outside system says it ran, but nothing of what ran was compared with the step, and no request will
    /// show it to a person (nothing else to rerun, or a bulk rerun's member): a manager records the verdict by
    /// hand.
    ContentNotCompared,
    /// The look-up failed; ask again.
    LookupFailed,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlanOutcome {
    /// Steps to rerun (empty when nothing is left to do).
    pub plan: RerunPlan,
    /// Not completed, but executed at the outside system: their completion flag is set instead of a rerun.
    pub confirm_flags: Vec<String>,
    /// Steps whose state forbids a request, with the reason in words.
    pub blocked: Vec<Blocked>,
}

impl PlanOutcome {
    pub fn is_ready(&self) -> bool {
        self.blocked.is_empty() && !self.plan.steps.is_empty()
    }

    /// What stops a request that no person goes through step by step (a bulk rerun's member, or a request with
    /// nothing to rerun): the blocks, and the steps that rest on the key alone.
    pub fn blocked_unless_a_person_confirms(&self) -> Vec<Blocked> {
        let on_key_alone = self
            .plan
            .on_key_alone
            .iter()
            .map(|step| Blocked { step: step.clone(), why: BlockedBecause::ContentNotCompared });
        self.blocked.iter().cloned().chain(on_key_alone).collect()
    }
}

/// Computes the plan for a stalled operation's steps (in workflow order).
pub fn compute(steps: &[StepFacts], workflow_version: &str) -> PlanOutcome {
    let (mut planned, mut confirm_flags, mut blocked, mut on_key_alone) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for step in steps.iter().filter(|s| !s.completed) {
        let block = |why| Blocked { step: step.name.clone(), why };
        match (step.checked_outside, step.verdict) {
            (false, _) | (true, Some(Verdict::NotExecuted)) => planned.push(PlannedStep {
                name: step.name.clone(),
                idempotency_key: step.idempotency_key.clone(),
                content_fingerprint: step.content_fingerprint.clone(),
            }),
            (true, Some(Verdict::Executed)) => confirm_flags.push(step.name.clone()),
            (true, None) => blocked.push(block(BlockedBecause::NotLookedUp)),
            (true, Some(Verdict::Unknown)) => blocked.push(block(BlockedBecause::ResultUnknown)),
            (true, Some(Verdict::InProgress)) => blocked.push(block(BlockedBecause::StillInProgress)),
            (true, Some(Verdict::ExecutedMismatch)) => blocked.push(block(BlockedBecause::ContentMismatch)),
            // Never a completion flag on the key alone: a person confirms that what ran is what was meant.
            (true, Some(Verdict::ExecutedNotCompared)) => on_key_alone.push(step.name.clone()),
            (true, Some(Verdict::LookupFailed)) => blocked.push(block(BlockedBecause::LookupFailed)),
        }
    }
    let mut plan = RerunPlan {
        steps: planned,
        workflow_version: workflow_version.to_string(),
        verdicts_hash: String::new(),
        on_key_alone,
        judged: Vec::new(),
        bound_to: Vec::new(),
    };
    plan.rebind(steps);
    PlanOutcome { plan, confirm_flags, blocked }
}

/// The fingerprint of what the outside systems said, step by step.
pub fn verdicts_hash(steps: &[StepFacts]) -> String {
    let facts: Vec<_> = steps
        .iter()
        .map(|s| json!({"step": s.name, "verdict": s.verdict, "external_id": s.external_id, "completed": s.completed}))
        .collect();
    hex::encode(Sha256::digest(to_canonical_string(&json!(facts)).as_bytes()))
}

/// What changed of what an approval is bound to.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Change {
    /// The workflow's definition is not the one the plan was made for (or is no longer configured).
    WorkflowVersion { approved: String, now: Option<String> },
    /// A planned step got its completion flag: it is done.
    FlagSet { step: String },
    /// A planned step is no longer proven not executed.
    Verdict { step: String, now: Option<Verdict> },
    /// A planned step's idempotency key or content is not the one approved (or the step is gone).
    Step { step: String },
    /// A step's verdict, external ID or flag is not what the plan was bound to: as it was, and as it is now
    /// (`None`: the step was not there).
    Fact { step: String, was: Option<StepSnapshot>, now: Option<StepSnapshot> },
    /// Another step's verdict, external ID or flag changed since the plan was made (a plan bound without its
    /// steps' facts).
    Evidence,
    /// A step the plan leaves out on the key alone has not been confirmed by a person on this request.
    Unconfirmed { step: String },
}

/// The plan checked against the facts as they are now: what changed (the plan holds when nothing did), and,
/// given the look-up made right before sending, which planned steps are still to be sent and which the outside
/// system shows executed by now (not sent: their flag is set instead). The one check of approval time and of
/// send time.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Check {
    pub changes: Vec<Change>,
    pub to_send: Vec<PlannedStep>,
    pub executed: Vec<String>,
}

impl Check {
    pub fn holds(&self) -> bool {
        self.changes.is_empty()
    }

    /// The steps left out on the key alone that no person has confirmed yet.
    pub fn unconfirmed(&self) -> Vec<&str> {
        self.changes
            .iter()
            .filter_map(|c| if let Change::Unconfirmed { step } = c { Some(step.as_str()) } else { None })
            .collect()
    }
}

pub fn check(plan: &RerunPlan, facts: &[StepFacts], version: Option<&str>, looked_up: &[(String, Verdict)]) -> Check {
    let mut result = Check::default();
    if version != Some(plan.workflow_version.as_str()) {
        let now = version.map(str::to_string);
        result.changes.push(Change::WorkflowVersion { approved: plan.workflow_version.clone(), now });
    }
    for planned in &plan.steps {
        let step = planned.name.clone();
        let Some(fact) = facts.iter().find(|f| f.name == planned.name) else {
            result.changes.push(Change::Step { step });
            continue;
        };
        if fact.idempotency_key != planned.idempotency_key || fact.content_fingerprint != planned.content_fingerprint {
            result.changes.push(Change::Step { step: step.clone() });
        }
        if fact.completed {
            result.changes.push(Change::FlagSet { step });
            continue;
        }
        if fact.checked_outside && fact.verdict != Some(Verdict::NotExecuted) {
            result.changes.push(Change::Verdict { step, now: fact.verdict });
            continue;
        }
        match looked_up.iter().find(|(name, _)| *name == planned.name).map(|(_, v)| *v) {
            None | Some(Verdict::NotExecuted) => result.to_send.push(planned.clone()),
            Some(Verdict::Executed) => result.executed.push(step),
            Some(now) => result.changes.push(Change::Verdict { step, now: Some(now) }),
        }
    }
    for step in &plan.on_key_alone {
        if !plan.judged.iter().any(|j| &j.step == step) {
            result.changes.push(Change::Unconfirmed { step: step.clone() });
        }
    }
    if result.changes.is_empty() && verdicts_hash(facts) != plan.verdicts_hash {
        result.changes = facts_changed(plan, facts);
    }
    result
}

/// Step by step, what is not as the plan was bound to; `Evidence` when the plan kept no facts to compare.
fn facts_changed(plan: &RerunPlan, facts: &[StepFacts]) -> Vec<Change> {
    let mut changes = Vec::new();
    for fact in facts {
        let was = plan.bound_to.iter().find(|b| b.step == fact.name).map(|b| b.state.clone());
        let now = fact.state();
        if was.as_ref() != Some(&now) {
            changes.push(Change::Fact { step: fact.name.clone(), was, now: Some(now) });
        }
    }
    for bound in plan.bound_to.iter().filter(|b| !facts.iter().any(|f| f.name == b.step)) {
        changes.push(Change::Fact { step: bound.step.clone(), was: Some(bound.state.clone()), now: None });
    }
    if plan.bound_to.is_empty() || changes.is_empty() {
        return vec![Change::Evidence];
    }
    changes
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(name: &str, completed: bool, verdict: Option<Verdict>) -> StepFacts {
        StepFacts {
            name: name.into(),
            idempotency_key: format!("KEY-{name}"),
            content_fingerprint: None,
            completed,
            verdict,
            external_id: None,
            checked_outside: true,
        }
    }

    #[test]
    fn the_partial_success_case_reruns_only_the_summary_with_its_original_key() {
        let steps = [
            step("register_order", true, Some(Verdict::Executed)),
            step("ai_summary", false, Some(Verdict::NotExecuted)),
        ];
        let outcome = compute(&steps, "v1");
        assert!(outcome.is_ready());
        assert_eq!(
            outcome.plan.steps,
            vec![PlannedStep {
                name: "ai_summary".into(),
                idempotency_key: "KEY-ai_summary".into(),
                content_fingerprint: None
            }]
        );
        assert!(outcome.confirm_flags.is_empty());
    }

    #[test]
    fn an_executed_step_without_its_flag_gets_the_flag_confirmed_instead_of_a_rerun() {
        let steps = [
            step("register_order", false, Some(Verdict::Executed)),
            step("ai_summary", false, Some(Verdict::NotExecuted)),
        ];
        let outcome = compute(&steps, "v1");
        assert_eq!(outcome.confirm_flags, vec!["register_order".to_string()]);
        assert_eq!(outcome.plan.steps.len(), 1);
        // Found done, but nothing of it compared: no flag on the key alone.
        let uncompared = [step("register_order", false, Some(Verdict::ExecutedNotCompared))];
        assert!(compute(&uncompared, "v1").confirm_flags.is_empty());
    }

    #[test]
    fn unknown_in_progress_mismatch_failed_and_unchecked_steps_block_with_a_reason() {
        use BlockedBecause::*;
        for (verdict, why) in [
            (Some(Verdict::Unknown), ResultUnknown),
            (Some(Verdict::InProgress), StillInProgress),
            (Some(Verdict::ExecutedMismatch), ContentMismatch),
            (Some(Verdict::LookupFailed), LookupFailed),
            (None, NotLookedUp),
        ] {
            let steps = [step("send_mail", false, verdict), step("issue_invoice", false, Some(Verdict::NotExecuted))];
            let outcome = compute(&steps, "v1");
            assert!(!outcome.is_ready(), "{verdict:?} must block");
            assert_eq!(outcome.blocked[0].step, "send_mail");
            assert_eq!(outcome.blocked[0].why, why);
        }
    }

    #[test]
    fn an_executed_step_whose_content_was_not_compared_waits_for_a_person_and_blocks_where_none_will_look() {
        let steps = [
            step("register_order", false, Some(Verdict::ExecutedNotCompared)),
            step("ai_summary", false, Some(Verdict::NotExecuted)),
        ];
        let outcome = compute(&steps, "v1");
        assert!(outcome.is_ready(), "a request may be made: it shows the step to a person");
        assert_eq!(outcome.plan.on_key_alone, vec!["register_order".to_string()]);
        let unconfirmed = check(&outcome.plan, &steps, Some("v1"), &[]);
        assert_eq!(unconfirmed.unconfirmed(), vec!["register_order"]);
        assert!(!unconfirmed.holds(), "not submitted, approved or sent until a person confirms");
        let mut plan = outcome.plan.clone();
        let at = DateTime::parse_from_rfc3339("2026-12-01T09:00:00Z").unwrap().with_timezone(&Utc);
        plan.judged.push(Judgment {
            step: "register_order".into(),
            by: 7,
            by_name: "sato".into(),
            at,
            comment: "同じ".into(),
        });
        assert!(check(&plan, &steps, Some("v1"), &[]).holds(), "confirmed on the request, with no flag set");
        let why = outcome.blocked_unless_a_person_confirms();
        assert_eq!(why, vec![Blocked { step: "register_order".into(), why: BlockedBecause::ContentNotCompared }]);
    }

    #[test]
    fn a_step_with_no_outside_effect_is_simply_planned_and_nothing_left_is_not_ready() {
        let mut note = step("note", false, None);
        note.checked_outside = false;
        assert_eq!(compute(&[note], "v1").plan.steps.len(), 1);
        let done = [step("register_order", true, Some(Verdict::Executed))];
        assert!(!compute(&done, "v1").is_ready(), "nothing to rerun");
    }

    #[test]
    fn any_change_of_a_verdict_or_an_external_id_changes_the_hash() {
        let a = [step("s", false, Some(Verdict::NotExecuted))];
        let mut b = a.clone();
        b[0].verdict = Some(Verdict::Executed);
        let mut c = a.clone();
        c[0].external_id = Some("x".into());
        assert_ne!(verdicts_hash(&a), verdicts_hash(&b));
        assert_ne!(verdicts_hash(&a), verdicts_hash(&c));
        assert_eq!(verdicts_hash(&a), verdicts_hash(&a.clone()));
    }

    fn planned(steps: &[StepFacts]) -> RerunPlan {
        compute(steps, "v1").plan
    }

    #[test]
    fn a_plan_holds_while_nothing_changes_and_sends_what_is_still_not_executed() {
        let steps = [
            step("register_order", true, Some(Verdict::Executed)),
            step("ai_summary", false, Some(Verdict::NotExecuted)),
        ];
        let plan = planned(&steps);
        let at_approval = check(&plan, &steps, Some("v1"), &[]);
        assert!(at_approval.holds());
        assert_eq!(at_approval.to_send, plan.steps);
        let looked = [("ai_summary".to_string(), Verdict::Executed)];
        let at_send = check(&plan, &steps, Some("v1"), &looked);
        assert!(at_send.holds() && at_send.to_send.is_empty());
        assert_eq!(at_send.executed, vec!["ai_summary".to_string()], "executed meanwhile: not sent, its flag set");
    }

    #[test]
    fn a_flag_a_verdict_a_key_or_the_workflow_changed_since_the_approval_voids_the_plan() {
        let steps = [
            step("register_order", true, Some(Verdict::Executed)),
            step("ai_summary", false, Some(Verdict::NotExecuted)),
        ];
        let plan = planned(&steps);
        let mut flagged = steps.clone();
        flagged[1].completed = true;
        assert_eq!(
            check(&plan, &flagged, Some("v1"), &[]).changes,
            vec![Change::FlagSet { step: "ai_summary".into() }]
        );
        let mut by_hand = steps.clone();
        by_hand[1].verdict = Some(Verdict::Unknown);
        let changes = check(&plan, &by_hand, Some("v1"), &[]).changes;
        assert_eq!(changes, vec![Change::Verdict { step: "ai_summary".into(), now: Some(Verdict::Unknown) }]);
        let mut rekeyed = steps.clone();
        rekeyed[1].idempotency_key = "other".into();
        assert!(check(&plan, &rekeyed, Some("v1"), &[]).changes.contains(&Change::Step { step: "ai_summary".into() }));
        let changes = check(&plan, &steps, Some("v2"), &[]).changes;
        assert_eq!(changes, vec![Change::WorkflowVersion { approved: "v1".into(), now: Some("v2".into()) }]);
        assert!(!check(&plan, &steps, None, &[]).holds(), "a workflow no longer configured");
        let in_progress = [("ai_summary".to_string(), Verdict::InProgress)];
        let at_send = check(&plan, &steps, Some("v1"), &in_progress);
        assert!(!at_send.holds() && at_send.to_send.is_empty(), "nothing is sent on a plan that no longer holds");
        let mut other = steps.clone();
        other[0].external_id = Some("ord-9".into());
        let was = StepSnapshot { verdict: Some(Verdict::Executed), external_id: None, completed: true };
        let now = StepSnapshot { external_id: Some("ord-9".into()), ..was.clone() };
        let named = Change::Fact { step: "register_order".into(), was: Some(was), now: Some(now) };
        assert_eq!(check(&plan, &other, Some("v1"), &[]).changes, vec![named], "the change is named, before and after");
        let unnamed = RerunPlan { bound_to: Vec::new(), ..plan.clone() };
        assert_eq!(
            check(&unnamed, &other, Some("v1"), &[]).changes,
            vec![Change::Evidence],
            "a plan kept without facts"
        );
    }
}
