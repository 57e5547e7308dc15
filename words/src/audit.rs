//! The audit trail's words: what each action and each actor is called on the pages. Exports keep the raw codes.
use crate::i18n::{Locale, td_string};
use contract::audit::ReasonView;
use domain::audit::{ActorKind, ObjectType, SystemActor, SystemLabel};
use domain::audit_action::AuditAction;
use domain::reasons::SystemReason;
use domain::signer_alarm::SignerAlarm;
use domain::stall::StallReason;

/// A name in the reader's language.
type Label = fn(Locale) -> &'static str;

/// Each action's name ("停止を検知" / "Stall detected"); a test checks that every action has one, once.
const ACTION_LABELS: [(AuditAction, Label); 103] = [
    (AuditAction::AiAttemptAdopted, |l| td_string!(l, audit.action.ai_attempt.adopted)),
    (AuditAction::ApiClientCreated, |l| td_string!(l, audit.action.api_client.created)),
    (AuditAction::ApiClientRevoked, |l| td_string!(l, audit.action.api_client.revoked)),
    (AuditAction::AuditExported, |l| td_string!(l, audit.action.audit.exported)),
    (AuditAction::AuditAlarmResolved, |l| td_string!(l, audit.action.audit.alarm_resolved)),
    (AuditAction::DatabaseBackedUp, |l| td_string!(l, audit.action.database.backed_up)),
    (AuditAction::DatabaseMarked, |l| td_string!(l, audit.action.database.marked)),
    (AuditAction::DepartmentCreated, |l| td_string!(l, audit.action.department.created)),
    (AuditAction::DepartmentRenamed, |l| td_string!(l, audit.action.department.renamed)),
    (AuditAction::DirectoryGroupChanged, |l| td_string!(l, audit.action.directory_group.changed)),
    (AuditAction::DirectoryGroupCreated, |l| td_string!(l, audit.action.directory_group.created)),
    (AuditAction::DirectoryGroupDeleted, |l| td_string!(l, audit.action.directory_group.deleted)),
    (AuditAction::DispatchPaused, |l| td_string!(l, audit.action.dispatch.paused)),
    (AuditAction::DispatchResumed, |l| td_string!(l, audit.action.dispatch.resumed)),
    (AuditAction::DrillEnded, |l| td_string!(l, audit.action.drill.ended)),
    (AuditAction::DrillReportExported, |l| td_string!(l, audit.action.drill.report_exported)),
    (AuditAction::DrillStarted, |l| td_string!(l, audit.action.drill.started)),
    (AuditAction::IdempotencyRecordsPurged, |l| td_string!(l, audit.action.idempotency.records_purged)),
    (AuditAction::IncidentActionAdded, |l| td_string!(l, audit.action.incident.action_added)),
    (AuditAction::IncidentActionUpdated, |l| td_string!(l, audit.action.incident.action_updated)),
    (AuditAction::IncidentCreated, |l| td_string!(l, audit.action.incident.created)),
    (AuditAction::IncidentOperationLinked, |l| td_string!(l, audit.action.incident.operation_linked)),
    (AuditAction::IncidentUpdated, |l| td_string!(l, audit.action.incident.updated)),
    (AuditAction::IndicatorThresholdCleared, |l| td_string!(l, audit.action.indicator.threshold_cleared)),
    (AuditAction::IndicatorThresholdCrossed, |l| td_string!(l, audit.action.indicator.threshold_crossed)),
    (AuditAction::OperationCompleted, |l| td_string!(l, audit.action.operation.completed)),
    (AuditAction::OperationEvidenceExported, |l| td_string!(l, audit.action.operation.evidence_exported)),
    (AuditAction::OperationHeld, |l| td_string!(l, audit.action.operation.held)),
    (AuditAction::OperationPatternAcknowledged, |l| td_string!(l, audit.action.operation.pattern_acknowledged)),
    (AuditAction::OperationRegistered, |l| td_string!(l, audit.action.operation.registered)),
    (AuditAction::OperationReleased, |l| td_string!(l, audit.action.operation.released)),
    (AuditAction::OperationResolved, |l| td_string!(l, audit.action.operation.resolved)),
    (AuditAction::OperationStalled, |l| td_string!(l, audit.action.operation.stalled)),
    (AuditAction::OutboundMessagesPurged, |l| td_string!(l, audit.action.outbound.messages_purged)),
    (AuditAction::RerunDispatched, |l| td_string!(l, audit.action.rerun.dispatched)),
    (AuditAction::RerunEndpointGone, |l| td_string!(l, audit.action.rerun.endpoint_gone)),
    (AuditAction::RerunFailed, |l| td_string!(l, audit.action.rerun.failed)),
    (AuditAction::RerunNothingToSend, |l| td_string!(l, audit.action.rerun.nothing_to_send)),
    (AuditAction::RerunOutcomeUnknown, |l| td_string!(l, audit.action.rerun.outcome_unknown)),
    (AuditAction::RerunRefused, |l| td_string!(l, audit.action.rerun.refused)),
    (AuditAction::RerunBatchApprovalRecorded, |l| td_string!(l, audit.action.rerun_batch.approval_recorded)),
    (AuditAction::RerunBatchApprovalVoided, |l| td_string!(l, audit.action.rerun_batch.approval_voided)),
    (AuditAction::RerunBatchApproved, |l| td_string!(l, audit.action.rerun_batch.approved)),
    (AuditAction::RerunBatchCancelled, |l| td_string!(l, audit.action.rerun_batch.cancelled)),
    (AuditAction::RerunBatchCheckConfirmed, |l| td_string!(l, audit.action.rerun_batch.check_confirmed)),
    (AuditAction::RerunBatchCompleted, |l| td_string!(l, audit.action.rerun_batch.completed)),
    (AuditAction::RerunBatchSent, |l| td_string!(l, audit.action.rerun_batch.sent)),
    (AuditAction::RerunBatchCreated, |l| td_string!(l, audit.action.rerun_batch.created)),
    (AuditAction::RerunBatchExpired, |l| td_string!(l, audit.action.rerun_batch.expired)),
    (AuditAction::RerunBatchOperationDropped, |l| td_string!(l, audit.action.rerun_batch.operation_dropped)),
    (AuditAction::RerunBatchPaused, |l| td_string!(l, audit.action.rerun_batch.paused)),
    (AuditAction::RerunBatchStageStarted, |l| td_string!(l, audit.action.rerun_batch.stage_started)),
    (AuditAction::RerunBatchStagePassed, |l| td_string!(l, audit.action.rerun_batch.stage_passed)),
    (AuditAction::RerunBatchStageFailed, |l| td_string!(l, audit.action.rerun_batch.stage_failed)),
    (AuditAction::RerunBatchStageResumed, |l| td_string!(l, audit.action.rerun_batch.stage_resumed)),
    (AuditAction::RerunBatchStageResumeRecorded, |l| td_string!(l, audit.action.rerun_batch.stage_resume_recorded)),
    (AuditAction::RerunBatchPreviewed, |l| td_string!(l, audit.action.rerun_batch.previewed)),
    (AuditAction::RerunBatchRejected, |l| td_string!(l, audit.action.rerun_batch.rejected)),
    (AuditAction::RerunBatchRequested, |l| td_string!(l, audit.action.rerun_batch.requested)),
    (AuditAction::RerunBatchResumed, |l| td_string!(l, audit.action.rerun_batch.resumed)),
    (AuditAction::RerunBatchSubmitted, |l| td_string!(l, audit.action.rerun_batch.submitted)),
    (AuditAction::RerunRequestApprovalRecorded, |l| td_string!(l, audit.action.rerun_request.approval_recorded)),
    (AuditAction::RerunRequestApprovalVoided, |l| td_string!(l, audit.action.rerun_request.approval_voided)),
    (AuditAction::RerunRequestApproved, |l| td_string!(l, audit.action.rerun_request.approved)),
    (AuditAction::RerunRequestCancelled, |l| td_string!(l, audit.action.rerun_request.cancelled)),
    (AuditAction::RerunRequestCheckConfirmed, |l| td_string!(l, audit.action.rerun_request.check_confirmed)),
    (AuditAction::RerunRequestKeyAloneConfirmed, |l| td_string!(l, audit.action.rerun_request.key_alone_confirmed)),
    (AuditAction::RerunRequestCreated, |l| td_string!(l, audit.action.rerun_request.created)),
    (AuditAction::RerunRequestExpired, |l| td_string!(l, audit.action.rerun_request.expired)),
    (AuditAction::RerunRequestRejected, |l| td_string!(l, audit.action.rerun_request.rejected)),
    (AuditAction::RerunRequestSubmitted, |l| td_string!(l, audit.action.rerun_request.submitted)),
    (AuditAction::RerunRequestSucceeded, |l| td_string!(l, audit.action.rerun_request.succeeded)),
    (AuditAction::RerunRequestVoided, |l| td_string!(l, audit.action.rerun_request.voided)),
    (AuditAction::ReviewExported, |l| td_string!(l, audit.action.review.exported)),
    (AuditAction::ReviewSignedOff, |l| td_string!(l, audit.action.review.signed_off)),
    (AuditAction::SignInFailed, |l| td_string!(l, audit.action.sign_in.failed)),
    (AuditAction::SignInSucceeded, |l| td_string!(l, audit.action.sign_in.succeeded)),
    (AuditAction::SignInThrottled, |l| td_string!(l, audit.action.sign_in.throttled)),
    (AuditAction::SignOut, |l| td_string!(l, audit.action.sign_out)),
    (AuditAction::StepFailed, |l| td_string!(l, audit.action.step.failed)),
    (AuditAction::StepFlagConfirmed, |l| td_string!(l, audit.action.step.flag_confirmed)),
    (AuditAction::StepHeartbeat, |l| td_string!(l, audit.action.step.heartbeat)),
    (AuditAction::StepManualVerdict, |l| td_string!(l, audit.action.step.manual_verdict)),
    (AuditAction::StepReconciled, |l| td_string!(l, audit.action.step.reconciled)),
    (AuditAction::StepStarted, |l| td_string!(l, audit.action.step.started)),
    (AuditAction::StepSucceeded, |l| td_string!(l, audit.action.step.succeeded)),
    (AuditAction::StepUnknown, |l| td_string!(l, audit.action.step.unknown)),
    (AuditAction::UserChatLinked, |l| td_string!(l, audit.action.user.chat_linked)),
    (AuditAction::UserChatUnlinked, |l| td_string!(l, audit.action.user.chat_unlinked)),
    (AuditAction::UserCreated, |l| td_string!(l, audit.action.user.created)),
    (AuditAction::UserDeleted, |l| td_string!(l, audit.action.user.deleted)),
    (AuditAction::UserDetailsChanged, |l| td_string!(l, audit.action.user.details_changed)),
    (AuditAction::UserDisabled, |l| td_string!(l, audit.action.user.disabled)),
    (AuditAction::UserEnabled, |l| td_string!(l, audit.action.user.enabled)),
    (AuditAction::UserPasswordChanged, |l| td_string!(l, audit.action.user.password_changed)),
    (AuditAction::UserPreferencesChanged, |l| td_string!(l, audit.action.user.preferences_changed)),
    (AuditAction::UserRolesChanged, |l| td_string!(l, audit.action.user.roles_changed)),
    (AuditAction::UserSignedOutEverywhere, |l| td_string!(l, audit.action.user.signed_out_everywhere)),
    (AuditAction::WebhookBodiesPurged, |l| td_string!(l, audit.action.webhook.bodies_purged)),
    (AuditAction::WebhookNotApplied, |l| td_string!(l, audit.action.webhook.not_applied)),
    (AuditAction::WebhookReceived, |l| td_string!(l, audit.action.webhook.received)),
    (AuditAction::WebhookStaleIgnored, |l| td_string!(l, audit.action.webhook.stale_ignored)),
    (AuditAction::WorkflowReceiverChecked, |l| td_string!(l, audit.action.workflow.receiver_checked)),
];

/// An action's name ("停止を検知" / "Stall detected").
pub fn action_label_in(l: Locale, action: AuditAction) -> &'static str {
    ACTION_LABELS.iter().find(|(a, _)| *a == action).map_or(action.as_str(), |(_, label)| label(l))
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
        "user" => td_string!(l, audit.key.user),
        "code" => td_string!(l, audit.key.code),
        "name_en" => td_string!(l, audit.key.name_en),
        "summary" => td_string!(l, audit.key.summary),
        "stall_reason" => td_string!(l, audit.key.stall_reason),
        "business_key" => td_string!(l, audit.key.business_key),
        "content_fingerprint" => td_string!(l, audit.key.content_fingerprint),
        "possible_duplicate_of" => td_string!(l, audit.key.possible_duplicate_of),
        "kind" => td_string!(l, audit.key.kind),
        "detail" => td_string!(l, audit.key.detail),
        "part" => td_string!(l, audit.key.part),
        "not_sent_executed" => td_string!(l, audit.key.not_sent_executed),
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
        ObjectType::DirectoryGroup => td_string!(l, audit.object.directory_group),
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
        SystemActor::Stages => td_string!(l, audit.actor.stages),
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
        SignerAlarm::TreeRewritten { from, to } => {
            td_string!(l, audit.signer_alarm.tree_rewritten, from = *from, to = *to).to_string()
        }
        SignerAlarm::TreeMismatch { seq } => td_string!(l, audit.signer_alarm.tree_mismatch, seq = *seq).to_string(),
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
        SystemReason::PlanMadeAgain => td_string!(l, audit.system_reason.plan_made_again).into(),
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
        SystemReason::GiverAccessEnded => td_string!(l, audit.system_reason.giver_access_ended).into(),
        SystemReason::StageFailed { stage } => {
            td_string!(l, audit.system_reason.stage_failed, stage = stage).to_string()
        }
        SystemReason::StagesChanged => td_string!(l, audit.system_reason.stages_changed).into(),
    }
}

/// The evidence ZIP's README.txt in one language: what each file holds and how to check the events.
pub fn bundle_readme_in(l: Locale, process_id: &str, at: &str, (seq, hash): (i64, &str)) -> String {
    let lines = [
        td_string!(l, audit.bundle_readme.title, process_id = process_id).to_string(),
        td_string!(l, audit.bundle_readme.taken, at = at, seq = seq, hash = hash).to_string(),
        String::new(),
        td_string!(l, audit.bundle_readme.operation).to_string(),
        td_string!(l, audit.bundle_readme.reconciliations).to_string(),
        td_string!(l, audit.bundle_readme.requests).to_string(),
        td_string!(l, audit.bundle_readme.ai).to_string(),
        td_string!(l, audit.bundle_readme.notifications).to_string(),
        td_string!(l, audit.bundle_readme.events, process_id = process_id).to_string(),
        td_string!(l, audit.bundle_readme.proofs).to_string(),
        String::new(),
        td_string!(l, audit.bundle_readme.check).to_string(),
        td_string!(l, audit.bundle_readme.check_one).to_string(),
    ];
    lines.join("\n") + "\n"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_action_has_one_name_in_both_languages() {
        for action in AuditAction::ALL {
            let entries = ACTION_LABELS.iter().filter(|(a, _)| a == action).count();
            assert_eq!(entries, 1, "{action} has {entries} names");
            for l in [Locale::ja, Locale::en] {
                assert_ne!(action_label_in(l, *action), action.as_str(), "{action} in {l:?}");
            }
        }
        assert_eq!(ACTION_LABELS.len(), AuditAction::ALL.len());
        assert_eq!(action_label_in(Locale::ja, AuditAction::OperationStalled), "停止を検知");
    }

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
