//! The audit trail's words: what each action and each actor is called on the pages. Exports keep the raw codes.
use crate::i18n::{Locale, td_string};
use contract::audit::ReasonView;
use domain::audit::{ActorKind, ObjectType, SystemActor, SystemLabel};
use domain::audit_action::AuditAction;
use domain::reasons::SystemReason;
use domain::signer_alarm::SignerAlarm;
use domain::stall::StallReason;

/// An action's name ("停止を検知" / "Stall detected").
pub fn action_label_in(l: Locale, action: AuditAction) -> &'static str {
    match action {
        AuditAction::AiAttemptAdopted => td_string!(l, audit.action.ai_attempt.adopted),
        AuditAction::ApiClientCreated => td_string!(l, audit.action.api_client.created),
        AuditAction::ApiClientRevoked => td_string!(l, audit.action.api_client.revoked),
        AuditAction::AuditExported => td_string!(l, audit.action.audit.exported),
        AuditAction::AuditAlarmResolved => td_string!(l, audit.action.audit.alarm_resolved),
        AuditAction::DatabaseBackedUp => td_string!(l, audit.action.database.backed_up),
        AuditAction::DatabaseMarked => td_string!(l, audit.action.database.marked),
        AuditAction::DepartmentCreated => td_string!(l, audit.action.department.created),
        AuditAction::DepartmentRenamed => td_string!(l, audit.action.department.renamed),
        AuditAction::DispatchPaused => td_string!(l, audit.action.dispatch.paused),
        AuditAction::DispatchResumed => td_string!(l, audit.action.dispatch.resumed),
        AuditAction::DrillEnded => td_string!(l, audit.action.drill.ended),
        AuditAction::DrillReportExported => td_string!(l, audit.action.drill.report_exported),
        AuditAction::DrillStarted => td_string!(l, audit.action.drill.started),
        AuditAction::IdempotencyRecordsPurged => td_string!(l, audit.action.idempotency.records_purged),
        AuditAction::IncidentActionAdded => td_string!(l, audit.action.incident.action_added),
        AuditAction::IncidentActionUpdated => td_string!(l, audit.action.incident.action_updated),
        AuditAction::IncidentCreated => td_string!(l, audit.action.incident.created),
        AuditAction::IncidentOperationLinked => td_string!(l, audit.action.incident.operation_linked),
        AuditAction::IncidentUpdated => td_string!(l, audit.action.incident.updated),
        AuditAction::IndicatorThresholdCleared => td_string!(l, audit.action.indicator.threshold_cleared),
        AuditAction::IndicatorThresholdCrossed => td_string!(l, audit.action.indicator.threshold_crossed),
        AuditAction::OperationCompleted => td_string!(l, audit.action.operation.completed),
        AuditAction::OperationEvidenceExported => td_string!(l, audit.action.operation.evidence_exported),
        AuditAction::OperationHeld => td_string!(l, audit.action.operation.held),
        AuditAction::OperationPatternAcknowledged => td_string!(l, audit.action.operation.pattern_acknowledged),
        AuditAction::OperationRegistered => td_string!(l, audit.action.operation.registered),
        AuditAction::OperationReleased => td_string!(l, audit.action.operation.released),
        AuditAction::OperationResolved => td_string!(l, audit.action.operation.resolved),
        AuditAction::OperationStalled => td_string!(l, audit.action.operation.stalled),
        AuditAction::OutboundMessagesPurged => td_string!(l, audit.action.outbound.messages_purged),
        AuditAction::RerunDispatched => td_string!(l, audit.action.rerun.dispatched),
        AuditAction::RerunEndpointGone => td_string!(l, audit.action.rerun.endpoint_gone),
        AuditAction::RerunFailed => td_string!(l, audit.action.rerun.failed),
        AuditAction::RerunNothingToSend => td_string!(l, audit.action.rerun.nothing_to_send),
        AuditAction::RerunOutcomeUnknown => td_string!(l, audit.action.rerun.outcome_unknown),
        AuditAction::RerunRefused => td_string!(l, audit.action.rerun.refused),
        AuditAction::RerunBatchApprovalRecorded => td_string!(l, audit.action.rerun_batch.approval_recorded),
        AuditAction::RerunBatchApproved => td_string!(l, audit.action.rerun_batch.approved),
        AuditAction::RerunBatchCancelled => td_string!(l, audit.action.rerun_batch.cancelled),
        AuditAction::RerunBatchCheckConfirmed => td_string!(l, audit.action.rerun_batch.check_confirmed),
        AuditAction::RerunBatchCompleted => td_string!(l, audit.action.rerun_batch.completed),
        AuditAction::RerunBatchCreated => td_string!(l, audit.action.rerun_batch.created),
        AuditAction::RerunBatchExpired => td_string!(l, audit.action.rerun_batch.expired),
        AuditAction::RerunBatchOperationDropped => td_string!(l, audit.action.rerun_batch.operation_dropped),
        AuditAction::RerunBatchPaused => td_string!(l, audit.action.rerun_batch.paused),
        AuditAction::RerunBatchPreviewed => td_string!(l, audit.action.rerun_batch.previewed),
        AuditAction::RerunBatchRejected => td_string!(l, audit.action.rerun_batch.rejected),
        AuditAction::RerunBatchRequested => td_string!(l, audit.action.rerun_batch.requested),
        AuditAction::RerunBatchResumed => td_string!(l, audit.action.rerun_batch.resumed),
        AuditAction::RerunBatchSubmitted => td_string!(l, audit.action.rerun_batch.submitted),
        AuditAction::RerunRequestApprovalRecorded => td_string!(l, audit.action.rerun_request.approval_recorded),
        AuditAction::RerunRequestApproved => td_string!(l, audit.action.rerun_request.approved),
        AuditAction::RerunRequestCancelled => td_string!(l, audit.action.rerun_request.cancelled),
        AuditAction::RerunRequestCheckConfirmed => td_string!(l, audit.action.rerun_request.check_confirmed),
        AuditAction::RerunRequestCreated => td_string!(l, audit.action.rerun_request.created),
        AuditAction::RerunRequestExpired => td_string!(l, audit.action.rerun_request.expired),
        AuditAction::RerunRequestRejected => td_string!(l, audit.action.rerun_request.rejected),
        AuditAction::RerunRequestSubmitted => td_string!(l, audit.action.rerun_request.submitted),
        AuditAction::RerunRequestSucceeded => td_string!(l, audit.action.rerun_request.succeeded),
        AuditAction::RerunRequestVoided => td_string!(l, audit.action.rerun_request.voided),
        AuditAction::ReviewExported => td_string!(l, audit.action.review.exported),
        AuditAction::ReviewSignedOff => td_string!(l, audit.action.review.signed_off),
        AuditAction::SignInFailed => td_string!(l, audit.action.sign_in.failed),
        AuditAction::SignInSucceeded => td_string!(l, audit.action.sign_in.succeeded),
        AuditAction::SignInThrottled => td_string!(l, audit.action.sign_in.throttled),
        AuditAction::SignOut => td_string!(l, audit.action.sign_out),
        AuditAction::StepFailed => td_string!(l, audit.action.step.failed),
        AuditAction::StepFlagConfirmed => td_string!(l, audit.action.step.flag_confirmed),
        AuditAction::StepHeartbeat => td_string!(l, audit.action.step.heartbeat),
        AuditAction::StepManualVerdict => td_string!(l, audit.action.step.manual_verdict),
        AuditAction::StepReconciled => td_string!(l, audit.action.step.reconciled),
        AuditAction::StepStarted => td_string!(l, audit.action.step.started),
        AuditAction::StepSucceeded => td_string!(l, audit.action.step.succeeded),
        AuditAction::StepUnknown => td_string!(l, audit.action.step.unknown),
        AuditAction::UserChatLinked => td_string!(l, audit.action.user.chat_linked),
        AuditAction::UserChatUnlinked => td_string!(l, audit.action.user.chat_unlinked),
        AuditAction::UserCreated => td_string!(l, audit.action.user.created),
        AuditAction::UserDisabled => td_string!(l, audit.action.user.disabled),
        AuditAction::UserEnabled => td_string!(l, audit.action.user.enabled),
        AuditAction::UserPasswordChanged => td_string!(l, audit.action.user.password_changed),
        AuditAction::UserPreferencesChanged => td_string!(l, audit.action.user.preferences_changed),
        AuditAction::UserRolesChanged => td_string!(l, audit.action.user.roles_changed),
        AuditAction::WebhookBodiesPurged => td_string!(l, audit.action.webhook.bodies_purged),
        AuditAction::WebhookNotApplied => td_string!(l, audit.action.webhook.not_applied),
        AuditAction::WebhookReceived => td_string!(l, audit.action.webhook.received),
        AuditAction::WebhookStaleIgnored => td_string!(l, audit.action.webhook.stale_ignored),
        AuditAction::WorkflowReceiverChecked => td_string!(l, audit.action.workflow.receiver_checked),
    }
}

/// The name of a field an event recorded ("状態" / "Status"); a field without one is shown by its key.
pub fn field_label_in(l: Locale, key: &str) -> Option<&'static str> {
    Some(match key {
        "status" => td_string!(l, audit.key.status),
        "verdict" => td_string!(l, audit.key.verdict),
        "step" => td_string!(l, audit.key.step),
        "steps" => td_string!(l, audit.key.steps),
        "rerun_id" => td_string!(l, audit.key.rerun_id),
        "batch_id" => td_string!(l, audit.key.batch_id),
        "username" => td_string!(l, audit.key.username),
        "display_name" => td_string!(l, audit.key.display_name),
        "name" => td_string!(l, audit.key.name),
        "roles" => td_string!(l, audit.key.roles),
        "memberships" => td_string!(l, audit.key.memberships),
        "departments" => td_string!(l, audit.key.departments),
        "department" => td_string!(l, audit.key.department),
        "makers" => td_string!(l, audit.key.makers),
        "approvals" => td_string!(l, audit.key.approvals),
        "required" => td_string!(l, audit.key.required),
        "operation_status" => td_string!(l, audit.key.operation_status),
        "completed_at" => td_string!(l, audit.key.completed_at),
        "workflow" => td_string!(l, audit.key.workflow),
        "seq" => td_string!(l, audit.key.seq),
        "result_id" => td_string!(l, audit.key.result_id),
        "process_id" => td_string!(l, audit.key.process_id),
        "operations" => td_string!(l, audit.key.operations),
        "ip" => td_string!(l, audit.key.ip),
        "idempotency_key" => td_string!(l, audit.key.idempotency_key),
        "failure_class" => td_string!(l, audit.key.failure_class),
        "external_id" => td_string!(l, audit.key.external_id),
        "event" => td_string!(l, audit.key.event),
        "connector" => td_string!(l, audit.key.connector),
        "comment" => td_string!(l, audit.key.comment),
        "time_zone" => td_string!(l, audit.key.time_zone),
        "language" => td_string!(l, audit.key.language),
        "email" => td_string!(l, audit.key.email),
        "disabled" => td_string!(l, audit.key.disabled),
        "expires_at" => td_string!(l, audit.key.expires_at),
        "authenticated" => td_string!(l, audit.key.authenticated),
        "reason" => td_string!(l, audit.key.reason),
        "why" => td_string!(l, audit.key.why),
        "state" => td_string!(l, audit.key.state),
        "paused" => td_string!(l, audit.key.paused),
        "rate_per_minute" => td_string!(l, audit.key.rate_per_minute),
        "cause_class" => td_string!(l, audit.key.cause_class),
        "cause_text" => td_string!(l, audit.key.cause_text),
        "attempts" => td_string!(l, audit.key.attempts),
        "error_class" => td_string!(l, audit.key.error_class),
        "rehashed" => td_string!(l, audit.key.rehashed),
        "amount" => td_string!(l, audit.key.amount),
        "plan" => td_string!(l, audit.key.plan),
        "decisions" => td_string!(l, audit.key.decisions),
        "description" => td_string!(l, audit.key.description),
        "requested_by" => td_string!(l, audit.key.requested_by),
        _ => return None,
    })
}

/// What kind of object an event is about ("ユーザー" / "User").
pub fn object_type_label_in(l: Locale, kind: ObjectType) -> &'static str {
    match kind {
        ObjectType::ApiClient => td_string!(l, audit.object.api_client),
        ObjectType::AuditTrail => td_string!(l, audit.object.audit_trail),
        ObjectType::Connector => td_string!(l, audit.object.connector),
        ObjectType::Database => td_string!(l, audit.object.database),
        ObjectType::Department => td_string!(l, audit.object.department),
        ObjectType::Drill => td_string!(l, audit.object.drill),
        ObjectType::IdempotencyRecord => td_string!(l, audit.object.idempotency_record),
        ObjectType::Incident => td_string!(l, audit.object.incident),
        ObjectType::Indicator => td_string!(l, audit.object.indicator),
        ObjectType::Operation => td_string!(l, audit.object.operation),
        ObjectType::OutboundMessage => td_string!(l, audit.object.outbound_message),
        ObjectType::RerunBatch => td_string!(l, audit.object.rerun_batch),
        ObjectType::Review => td_string!(l, audit.object.review),
        ObjectType::User => td_string!(l, audit.object.user),
        ObjectType::Webhook => td_string!(l, audit.object.webhook),
        ObjectType::Workflow => td_string!(l, audit.object.workflow),
    }
}

/// An action's name from its stored code; a code this version does not know is shown as it is.
pub fn action_code_label_in(l: Locale, code: &str) -> String {
    AuditAction::parse(code).map_or_else(|| code.to_string(), |a| action_label_in(l, a).to_string())
}

/// One of Rerun Gate's own parts ("照合（自動）" / "Reconciler").
pub fn system_actor_label_in(l: Locale, part: SystemActor) -> &'static str {
    match part {
        SystemActor::Dispatcher => td_string!(l, audit.actor.dispatcher),
        SystemActor::Sweeper => td_string!(l, audit.actor.sweeper),
        SystemActor::Reconciler => td_string!(l, audit.actor.reconciler),
        SystemActor::Housekeeping => td_string!(l, audit.actor.housekeeping),
        SystemActor::Configuration => td_string!(l, audit.actor.configuration),
        SystemActor::CommandLine => td_string!(l, audit.actor.command_line),
        SystemActor::Indicators => td_string!(l, audit.actor.indicators),
        SystemActor::BulkPreview => td_string!(l, audit.actor.bulk_preview),
        SystemActor::Demo => td_string!(l, audit.actor.demo),
        SystemActor::IdentityProvider => td_string!(l, audit.actor.identity_provider),
    }
}

/// Who acted: a person or an API client by their name, a part of the system by what it is called.
pub fn actor_label_in(l: Locale, kind: ActorKind, label: &str) -> String {
    match (kind, SystemLabel::parse(label)) {
        (ActorKind::System, Some(SystemLabel::Part(part))) => system_actor_label_in(l, part).to_string(),
        (ActorKind::System, Some(SystemLabel::Webhook { connector })) => {
            td_string!(l, audit.actor.webhook, connector = connector).to_string()
        }
        _ => label.to_string(),
    }
}

/// Who acted, from the kind and label the trail stored (a kind this version does not know: the label).
pub fn stored_actor_label_in(l: Locale, kind: &str, label: &str) -> String {
    ActorKind::parse(kind).map_or_else(|| label.to_string(), |kind| actor_label_in(l, kind, label))
}

/// The stored kind of an actor, named.
pub fn stored_actor_kind_label_in(l: Locale, kind: &str) -> String {
    ActorKind::parse(kind).map_or_else(|| kind.to_string(), |kind| actor_kind_label_in(l, kind).to_string())
}

/// An actor's kind ("ユーザー" / "user").
pub fn actor_kind_label_in(l: Locale, kind: ActorKind) -> &'static str {
    match kind {
        ActorKind::User => td_string!(l, audit.actor_kind.user),
        ActorKind::ApiClient => td_string!(l, audit.actor_kind.api_client),
        ActorKind::System => td_string!(l, audit.actor_kind.system),
        ActorKind::Anonymous => td_string!(l, audit.actor_kind.anonymous),
    }
}

/// Who asked for a reconciliation, as stored with its result: `<kind>:<label>` (`system:reconciler`,
/// `user:sato`), `manual:<user>` for a verdict recorded by hand, `webhook:<connector>`.
pub fn asked_by_label_in(l: Locale, asked_by: &str) -> String {
    let Some((kind, label)) = asked_by.split_once(':') else { return asked_by.to_string() };
    match kind {
        "manual" => td_string!(l, audit.actor.by_hand, name = label).to_string(),
        // `webhook:<connector>` is also how the trail labels a connector's webhooks.
        "webhook" => actor_label_in(l, ActorKind::System, asked_by),
        _ => match ActorKind::parse(kind) {
            Some(kind) => actor_label_in(l, kind, label),
            None => asked_by.to_string(),
        },
    }
}

/// The audit signer's alarm, in the reader's language, with the numbers.
pub fn signer_alarm_in(l: Locale, alarm: &SignerAlarm) -> String {
    match alarm {
        SignerAlarm::HistoryChanged { seq, found: None, head, .. } if head < seq => {
            td_string!(l, audit.signer_alarm.missing, seq = *seq, head = *head, first = *head + 1).to_string()
        }
        SignerAlarm::HistoryChanged { seq, found: None, .. } => {
            td_string!(l, audit.signer_alarm.gone, seq = *seq).to_string()
        }
        SignerAlarm::HistoryChanged { seq, found: Some(_), .. } => {
            td_string!(l, audit.signer_alarm.rewritten, seq = *seq).to_string()
        }
        SignerAlarm::ChainBroken { seq, .. } => td_string!(l, audit.signer_alarm.chain_broken, seq = *seq).to_string(),
        SignerAlarm::MemoryLost { problem } => {
            td_string!(l, audit.signer_alarm.memory_lost, problem = problem.as_str()).to_string()
        }
    }
}

/// An event's reason: the system's own in the reader's language, a person's as written.
pub fn reason_label_in(l: Locale, reason: Option<String>) -> Option<ReasonView> {
    let reason = reason?;
    Some(match SystemReason::parse(&reason) {
        Some(system) => ReasonView { text: system_reason_label_in(l, &system), written: false },
        None => ReasonView { text: reason, written: true },
    })
}

pub fn system_reason_label_in(l: Locale, reason: &SystemReason) -> String {
    match reason {
        SystemReason::Stalled(stall) => match stall {
            StallReason::Failed { error_class: Some(class) } => {
                td_string!(l, audit.system_reason.failed, error_class = class).to_string()
            }
            StallReason::Failed { error_class: None } => td_string!(l, audit.system_reason.failed_unclassified).into(),
            StallReason::UnknownOutcome => td_string!(l, audit.system_reason.unknown_outcome).into(),
            StallReason::NoHeartbeat { seconds } => {
                td_string!(l, audit.system_reason.no_heartbeat, seconds = *seconds).to_string()
            }
            StallReason::RunningPastDeadline { seconds } => {
                td_string!(l, audit.system_reason.running_past_deadline, seconds = *seconds).to_string()
            }
            StallReason::NoAnswerWithinDeadline { seconds } => {
                td_string!(l, audit.system_reason.no_answer_within_deadline, seconds = *seconds).to_string()
            }
            StallReason::NotStartedWithin { seconds } => {
                td_string!(l, audit.system_reason.not_started_within, seconds = *seconds).to_string()
            }
        },
        SystemReason::ExecutedBeforeSend => td_string!(l, audit.system_reason.executed_before_send).into(),
        SystemReason::NoDecisionInTime => td_string!(l, audit.system_reason.no_decision_in_time).into(),
        SystemReason::ValidityRanOut => td_string!(l, audit.system_reason.validity_ran_out).into(),
        SystemReason::PlanNoLongerHolds => td_string!(l, audit.system_reason.plan_no_longer_holds).into(),
        SystemReason::OutsideShowsExecuted => td_string!(l, audit.system_reason.outside_shows_executed).into(),
        SystemReason::WebhookApplied { version, verdict } => {
            let verdict = super::verdict_label_in(l, Some(*verdict));
            td_string!(l, audit.system_reason.webhook_applied, version = *version, verdict = verdict).to_string()
        }
        SystemReason::WebhookNotNewer { version } => {
            td_string!(l, audit.system_reason.webhook_not_newer, version = *version).to_string()
        }
        SystemReason::WebhookUnreadable => td_string!(l, audit.system_reason.webhook_unreadable).into(),
        SystemReason::WebhookUnmatched => td_string!(l, audit.system_reason.webhook_unmatched).into(),
        SystemReason::WebhookConnectorClosed => td_string!(l, audit.system_reason.webhook_connector_closed).into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn system_actors_and_reconciliation_askers_have_names_in_both_languages() {
        assert_eq!(asked_by_label_in(Locale::ja, "system:reconciler"), "照合（自動）");
        assert_eq!(asked_by_label_in(Locale::en, "system:reconciler"), "Reconciler");
        assert_eq!(asked_by_label_in(Locale::en, "webhook:stripe"), "Webhook (stripe)");
        assert_eq!(asked_by_label_in(Locale::ja, "manual:sato"), "sato（手動）");
        assert_eq!(asked_by_label_in(Locale::ja, "user:sato"), "sato");
        assert_eq!(actor_label_in(Locale::en, ActorKind::System, "webhook:ai"), "Webhook (ai)");
        assert_eq!(actor_label_in(Locale::en, ActorKind::System, "retired-part"), "retired-part");
    }

    #[test]
    fn every_action_has_a_name_that_is_not_its_code() {
        for action in AuditAction::ALL {
            for l in [Locale::ja, Locale::en] {
                let label = action_label_in(l, *action);
                assert!(!label.is_empty() && label != action.as_str(), "{action} in {l:?}");
            }
        }
        assert_eq!(action_code_label_in(Locale::ja, "operation.stalled"), "停止を検知");
        assert_eq!(action_code_label_in(Locale::ja, "operation.archived_long_ago"), "operation.archived_long_ago");
    }
}
