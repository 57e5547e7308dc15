//! The reasons the system itself gives for an audit event, as facts. Each has one English text, stored as the
//! event's reason (the trail and its exports keep it, and it is hashed into the chain), which `parse` reads back
//! into the facts, for events written by this version or an earlier one; the pages say them in the reader's
//! language. A reason a person wrote parses to nothing and is shown as written.
use super::reconciliation::Verdict;
use super::stall::StallReason;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SystemReason {
    Stalled(StallReason),
    /// The dispatcher found, right before sending, that the outside system had already done the steps.
    ExecutedBeforeSend,
    /// A request ran out of its approval's validity without a decision.
    NoDecisionInTime,
    /// A decision came after the approval's validity had run out.
    ValidityRanOut,
    /// What the plan rests on changed (a flag, a verdict, the workflow), so its approval no longer holds.
    PlanNoLongerHolds,
    /// Reconciliation found a planned step executed at the outside system.
    OutsideShowsExecuted,
    /// The facts a draft's plan was bound to changed: its makers made the plan again (a new draft).
    PlanMadeAgain,
    WebhookApplied {
        version: i64,
        verdict: Verdict,
    },
    WebhookNotNewer {
        version: i64,
    },
    WebhookUnreadable,
    WebhookUnmatched,
    WebhookConnectorClosed,
    /// The person who gave an approval can no longer decide (removed from the directory, disabled, no longer a
    /// manager of the department): their approval stops counting while the request waits.
    GiverAccessEnded,
    /// A stage of a bulk rerun (numbered from 1) was not proven at the outside systems: the batch stopped.
    StageFailed {
        stage: u32,
    },
    /// The stages configured for a bulk rerun's workflows changed after it was approved.
    StagesChanged,
}

const EXECUTED_BEFORE_SEND: &str = "executed at the outside system before the rerun was sent";
const NO_DECISION_IN_TIME: &str = "no decision within the approval's validity";
const VALIDITY_RAN_OUT: &str = "the approval's validity ran out";
const PLAN_NO_LONGER_HOLDS: &str = "the plan no longer holds";
const OUTSIDE_SHOWS_EXECUTED: &str = "the outside system shows the step executed";
const PLAN_MADE_AGAIN: &str = "the facts changed: the plan was made again";
const WEBHOOK_UNREADABLE: &str = "the body is not JSON (or was purged)";
const WEBHOOK_UNMATCHED: &str = "no step of this connector has that idempotency key or result ID";
const WEBHOOK_CONNECTOR_CLOSED: &str = "the connector no longer accepts webhooks";
const GIVER_ACCESS_ENDED: &str = "the approver can no longer decide here";
const STAGES_CHANGED: &str = "the bulk rerun's stages changed after its approval";

impl SystemReason {
    pub fn text(&self) -> String {
        match self {
            SystemReason::Stalled(reason) => reason.text(),
            SystemReason::ExecutedBeforeSend => EXECUTED_BEFORE_SEND.into(),
            SystemReason::NoDecisionInTime => NO_DECISION_IN_TIME.into(),
            SystemReason::ValidityRanOut => VALIDITY_RAN_OUT.into(),
            SystemReason::PlanNoLongerHolds => PLAN_NO_LONGER_HOLDS.into(),
            SystemReason::OutsideShowsExecuted => OUTSIDE_SHOWS_EXECUTED.into(),
            SystemReason::PlanMadeAgain => PLAN_MADE_AGAIN.into(),
            SystemReason::WebhookApplied { version, verdict } => format!("version {version}: {}", verdict.as_str()),
            SystemReason::WebhookNotNewer { version } => format!("version {version} is not newer than the step's"),
            SystemReason::WebhookUnreadable => WEBHOOK_UNREADABLE.into(),
            SystemReason::WebhookUnmatched => WEBHOOK_UNMATCHED.into(),
            SystemReason::WebhookConnectorClosed => WEBHOOK_CONNECTOR_CLOSED.into(),
            SystemReason::GiverAccessEnded => GIVER_ACCESS_ENDED.into(),
            SystemReason::StageFailed { stage } => format!("stage {stage} was not proven at the outside systems"),
            SystemReason::StagesChanged => STAGES_CHANGED.into(),
        }
    }

    pub fn parse(text: &str) -> Option<SystemReason> {
        let fixed = [
            (EXECUTED_BEFORE_SEND, SystemReason::ExecutedBeforeSend),
            (NO_DECISION_IN_TIME, SystemReason::NoDecisionInTime),
            (VALIDITY_RAN_OUT, SystemReason::ValidityRanOut),
            (PLAN_NO_LONGER_HOLDS, SystemReason::PlanNoLongerHolds),
            (OUTSIDE_SHOWS_EXECUTED, SystemReason::OutsideShowsExecuted),
            (PLAN_MADE_AGAIN, SystemReason::PlanMadeAgain),
            (WEBHOOK_UNREADABLE, SystemReason::WebhookUnreadable),
            (WEBHOOK_UNMATCHED, SystemReason::WebhookUnmatched),
            (WEBHOOK_CONNECTOR_CLOSED, SystemReason::WebhookConnectorClosed),
            (GIVER_ACCESS_ENDED, SystemReason::GiverAccessEnded),
            (STAGES_CHANGED, SystemReason::StagesChanged),
        ];
        if let Some((_, reason)) = fixed.into_iter().find(|(t, _)| *t == text) {
            return Some(reason);
        }
        if let Some(rest) = text.strip_prefix("version ") {
            if let Some(version) = rest.strip_suffix(" is not newer than the step's") {
                return Some(SystemReason::WebhookNotNewer { version: version.parse().ok()? });
            }
            let (version, verdict) = rest.split_once(": ")?;
            return Some(SystemReason::WebhookApplied {
                version: version.parse().ok()?,
                verdict: Verdict::parse(verdict)?,
            });
        }
        if let Some(stage) =
            text.strip_prefix("stage ").and_then(|r| r.strip_suffix(" was not proven at the outside systems"))
        {
            return Some(SystemReason::StageFailed { stage: stage.parse().ok()? });
        }
        StallReason::parse(text).map(SystemReason::Stalled)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_reason_reads_back_from_its_text_and_a_persons_words_do_not() {
        let reasons = [
            SystemReason::Stalled(StallReason::Failed { error_class: Some("server_error".into()) }),
            SystemReason::Stalled(StallReason::Failed { error_class: None }),
            SystemReason::Stalled(StallReason::UnknownOutcome),
            SystemReason::Stalled(StallReason::NoHeartbeat { seconds: 60 }),
            SystemReason::Stalled(StallReason::RunningPastDeadline { seconds: 1800 }),
            SystemReason::Stalled(StallReason::NoAnswerWithinDeadline { seconds: 30 }),
            SystemReason::Stalled(StallReason::NotStartedWithin { seconds: 900 }),
            SystemReason::ExecutedBeforeSend,
            SystemReason::NoDecisionInTime,
            SystemReason::ValidityRanOut,
            SystemReason::PlanNoLongerHolds,
            SystemReason::OutsideShowsExecuted,
            SystemReason::PlanMadeAgain,
            SystemReason::WebhookApplied { version: 3, verdict: Verdict::Executed },
            SystemReason::WebhookNotNewer { version: 2 },
            SystemReason::WebhookUnreadable,
            SystemReason::WebhookUnmatched,
            SystemReason::WebhookConnectorClosed,
            SystemReason::GiverAccessEnded,
            SystemReason::StageFailed { stage: 2 },
            SystemReason::StagesChanged,
        ];
        for reason in reasons {
            assert_eq!(SystemReason::parse(&reason.text()), Some(reason));
        }
        assert_eq!(SystemReason::parse("not started within 900 s").unwrap().text(), "not started within 900 s");
        for written in ["要約が起動しなかったため", "failed", "version x: executed", "not started within soon s"]
        {
            assert_eq!(SystemReason::parse(written), None, "{written}");
        }
    }
}
