//! The audit trail's catalogue of actions: every event a service records names one of these. The stored and
//! exported form is the dotted name (`rerun_request.approved`); events read back keep the name as it was
//! written, so an export of old history never depends on this list.
use super::names::named;

named! {
    pub enum AuditAction {
        // ai_attempt
        AiAttemptAdopted => "ai_attempt.adopted",
        // api_client
        ApiClientCreated => "api_client.created",
        ApiClientRevoked => "api_client.revoked",
        // audit
        AuditExported => "audit.exported",
        AuditAlarmResolved => "audit.alarm_resolved",
        // database
        DatabaseBackedUp => "database.backed_up",
        DatabaseMarked => "database.marked",
        // department
        DepartmentCreated => "department.created",
        DepartmentRenamed => "department.renamed",
        // directory_group
        DirectoryGroupChanged => "directory_group.changed",
        DirectoryGroupCreated => "directory_group.created",
        DirectoryGroupDeleted => "directory_group.deleted",
        // dispatch
        DispatchPaused => "dispatch.paused",
        DispatchResumed => "dispatch.resumed",
        // drill
        DrillEnded => "drill.ended",
        DrillReportExported => "drill.report_exported",
        DrillStarted => "drill.started",
        // idempotency
        IdempotencyRecordsPurged => "idempotency.records_purged",
        // incident
        IncidentActionAdded => "incident.action_added",
        IncidentActionUpdated => "incident.action_updated",
        IncidentCreated => "incident.created",
        IncidentOperationLinked => "incident.operation_linked",
        IncidentUpdated => "incident.updated",
        // indicator
        IndicatorThresholdCleared => "indicator.threshold_cleared",
        IndicatorThresholdCrossed => "indicator.threshold_crossed",
        // operation
        OperationCompleted => "operation.completed",
        OperationEvidenceExported => "operation.evidence_exported",
        OperationHeld => "operation.held",
        OperationPatternAcknowledged => "operation.pattern_acknowledged",
        OperationRegistered => "operation.registered",
        OperationReleased => "operation.released",
        OperationResolved => "operation.resolved",
        OperationStalled => "operation.stalled",
        // outbound
        OutboundMessagesPurged => "outbound.messages_purged",
        // rerun
        RerunDispatched => "rerun.dispatched",
        RerunEndpointGone => "rerun.endpoint_gone",
        RerunFailed => "rerun.failed",
        RerunNothingToSend => "rerun.nothing_to_send",
        RerunOutcomeUnknown => "rerun.outcome_unknown",
        RerunRefused => "rerun.refused",
        // rerun_batch
        RerunBatchApprovalRecorded => "rerun_batch.approval_recorded",
        RerunBatchApproved => "rerun_batch.approved",
        RerunBatchApprovalVoided => "rerun_batch.approval_voided",
        RerunBatchCancelled => "rerun_batch.cancelled",
        RerunBatchCheckConfirmed => "rerun_batch.check_confirmed",
        RerunBatchCompleted => "rerun_batch.completed",
        RerunBatchSent => "rerun_batch.sent",
        RerunBatchCreated => "rerun_batch.created",
        RerunBatchExpired => "rerun_batch.expired",
        RerunBatchOperationDropped => "rerun_batch.operation_dropped",
        RerunBatchPaused => "rerun_batch.paused",
        RerunBatchPreviewed => "rerun_batch.previewed",
        RerunBatchRejected => "rerun_batch.rejected",
        RerunBatchRequested => "rerun_batch.requested",
        RerunBatchResumed => "rerun_batch.resumed",
        RerunBatchSubmitted => "rerun_batch.submitted",
        RerunBatchStageStarted => "rerun_batch.stage_started",
        RerunBatchStagePassed => "rerun_batch.stage_passed",
        RerunBatchStageFailed => "rerun_batch.stage_failed",
        RerunBatchStageResumed => "rerun_batch.stage_resumed",
        /// A manager decided a batch stopped by a failed stage goes on; more decisions are needed for its quorum.
        RerunBatchStageResumeRecorded => "rerun_batch.stage_resume_recorded",
        // rerun_request
        RerunRequestApprovalRecorded => "rerun_request.approval_recorded",
        RerunRequestApproved => "rerun_request.approved",
        RerunRequestApprovalVoided => "rerun_request.approval_voided",
        RerunRequestCancelled => "rerun_request.cancelled",
        RerunRequestCheckConfirmed => "rerun_request.check_confirmed",
        /// A person confirmed, on the request, a step left out on the key alone (its flag waits for the send).
        RerunRequestKeyAloneConfirmed => "rerun_request.key_alone_confirmed",
        RerunRequestCreated => "rerun_request.created",
        RerunRequestExpired => "rerun_request.expired",
        RerunRequestRejected => "rerun_request.rejected",
        RerunRequestSubmitted => "rerun_request.submitted",
        RerunRequestSucceeded => "rerun_request.succeeded",
        RerunRequestVoided => "rerun_request.voided",
        // review
        ReviewExported => "review.exported",
        ReviewSignedOff => "review.signed_off",
        // sign_in
        SignInFailed => "sign_in.failed",
        SignInSucceeded => "sign_in.succeeded",
        SignInThrottled => "sign_in.throttled",
        // sign_out
        SignOut => "sign_out",
        // step
        StepFailed => "step.failed",
        StepFlagConfirmed => "step.flag_confirmed",
        StepHeartbeat => "step.heartbeat",
        StepManualVerdict => "step.manual_verdict",
        StepReconciled => "step.reconciled",
        StepStarted => "step.started",
        StepSucceeded => "step.succeeded",
        StepUnknown => "step.unknown",
        // user
        UserChatLinked => "user.chat_linked",
        UserChatUnlinked => "user.chat_unlinked",
        UserCreated => "user.created",
        UserDeleted => "user.deleted",
        UserDetailsChanged => "user.details_changed",
        UserDisabled => "user.disabled",
        UserEnabled => "user.enabled",
        UserPasswordChanged => "user.password_changed",
        UserPreferencesChanged => "user.preferences_changed",
        UserRolesChanged => "user.roles_changed",
        UserSignedOutEverywhere => "user.signed_out_everywhere",
        // webhook
        WebhookBodiesPurged => "webhook.bodies_purged",
        WebhookNotApplied => "webhook.not_applied",
        WebhookReceived => "webhook.received",
        WebhookStaleIgnored => "webhook.stale_ignored",
        // workflow
        WorkflowReceiverChecked => "workflow.receiver_checked",
    }
}

impl AuditAction {
    /// Routine events: everyone signs in and out and sets their language every day. The audit page folds them
    /// away unless asked (exports keep everything); failed and throttled sign-ins are not routine.
    pub fn is_routine(self) -> bool {
        matches!(self, AuditAction::SignInSucceeded | AuditAction::SignOut | AuditAction::UserPreferencesChanged)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_action_reads_back_from_its_name_and_serializes_as_it() {
        for action in AuditAction::ALL {
            assert_eq!(AuditAction::parse(action.as_str()), Some(*action));
            assert_eq!(serde_json::to_string(action).unwrap(), format!("\"{action}\""));
        }
        assert_eq!(AuditAction::parse("rerun_request.approved_twice"), None);
    }
}
