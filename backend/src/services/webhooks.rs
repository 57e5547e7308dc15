//! Inbound webhooks from outside systems (`/hooks/{connector}`): verified before parsing, stored first
//! (a receipt, deduplicated on `webhook-id`), processed after (an event record). A webhook becomes a
//! reconciliation result of the step it is about; a webhook older than one already applied never overwrites it.
use super::audit::record;
use crate::db::operations::OperationRow;
use crate::db::reconciliations::NewReconciliation;
use crate::db::webhooks::{NewEvent, ReceiptRow};
use crate::reconciliation::{ConfiguredConnector, WebhookRecord, json_path as path};
use crate::{AppState, db};
use chrono::Duration;
use contract::AppError;
use domain::audit::{Actor, AuditEntry, ObjectType, SystemActor};
use domain::audit_action::AuditAction;
use domain::reasons::SystemReason;
use domain::reconciliation::Finding;
use domain::reconciliation::Record;
use domain::steps::Step;
use domain::webhooks::{Headers, verify};
use serde_json::{Value, json};

#[derive(Debug, PartialEq, Eq)]
pub enum Received {
    /// Stored (and processed, unless processing failed: it is retried in the background).
    Accepted,
    /// This webhook-id was received before: nothing happens a second time.
    Duplicate,
}

fn connector<'a>(state: &'a AppState, name: &str) -> Result<(&'a ConfiguredConnector, Actor), AppError> {
    let connector = state.connectors.get(name).filter(|c| c.webhook_secrets.is_some()).ok_or(AppError::NotFound)?;
    Ok((connector, Actor::webhook(name)))
}

/// Verifies, deduplicates and stores one webhook, then processes it.
pub async fn receive(state: &AppState, name: &str, headers: &Headers<'_>, body: &[u8]) -> Result<Received, AppError> {
    let (connector, actor) = connector(state, name)?;
    let secrets = connector.webhook_secrets.as_deref().unwrap_or_default();
    let sent_at = verify(secrets, headers, body, state.clock.now()).map_err(|error| {
        tracing::warn!(connector = name, %error, "webhook refused: signature check failed");
        AppError::Unauthorized
    })?;
    let text = std::str::from_utf8(body).map_err(|_| AppError::BadRequest("the body is not UTF-8 text".into()))?;
    let webhook_id = headers.id.unwrap_or_default();
    let now = state.clock.now();
    let mut tx = state.db.begin_write().await?;
    let Some(receipt_id) = db::webhooks::insert_receipt(&mut tx, name, webhook_id, sent_at, text, now).await? else {
        tx.commit().await?;
        tracing::info!(connector = name, webhook_id, "duplicate webhook ignored");
        return Ok(Received::Duplicate);
    };
    let entry =
        AuditEntry::new(actor, AuditAction::WebhookReceived, ObjectType::Webhook, format!("{name}/{webhook_id}"))
            .after(json!({"connector": name, "webhook_id": webhook_id, "sent_at": sent_at}));
    record(&mut tx, entry, None, now).await?;
    tx.commit().await?;
    if let Err(error) = process(state, receipt_id).await {
        tracing::error!(connector = name, webhook_id, %error, "webhook stored; processing failed, will retry");
    }
    Ok(Received::Accepted)
}

/// Processes stored receipts that were not processed yet (after a crash or a failed first try).
pub async fn process_pending(state: &AppState) -> Result<usize, AppError> {
    let pending = {
        let mut tx = state.db.begin_read().await?;
        db::webhooks::unprocessed(&mut tx, 100).await?
    };
    for receipt in &pending {
        if let Err(error) = process(state, receipt.id).await {
            tracing::error!(receipt = receipt.id, %error, "webhook processing failed");
        }
    }
    Ok(pending.len())
}

/// What one receipt means for its step, recorded with its audit event in one transaction.
pub async fn process(state: &AppState, receipt_id: i64) -> Result<(), AppError> {
    let receipt = {
        let mut tx = state.db.begin_read().await?;
        db::webhooks::receipt(&mut tx, receipt_id).await?.ok_or(AppError::NotFound)?
    };
    let Ok((connector, actor)) = connector(state, &receipt.connector) else {
        let actor = Actor::webhook(&receipt.connector);
        return finish(state, &receipt, actor, Outcome::NoConnector).await;
    };
    let payload: Option<Value> = receipt.body.as_deref().and_then(|b| serde_json::from_str(b).ok());
    let Some(payload) = payload else {
        return finish(state, &receipt, actor, Outcome::Unreadable).await;
    };
    let version = path(&payload, &connector.common.webhook_version)
        .and_then(Value::as_i64)
        .unwrap_or(receipt.sent_at.timestamp());
    let data = path(&payload, &connector.common.webhook_record).cloned().unwrap_or(Value::Null);
    let found = connector.connector.webhook_record(&data);
    let step = matching_step(state, connector, &receipt, &found).await?;
    let Some((operation, step)) = step else {
        return finish(state, &receipt, actor, Outcome::Unmatched).await;
    };
    apply(state, connector, actor, &receipt, (operation, step), found.record, version).await
}

/// The one step the webhook tells about: only a step that calls this outside system can be it (so only a
/// department whose workflows call it); a key is unique per connector, and a webhook that fits two steps fits none.
async fn matching_step(
    state: &AppState,
    connector: &ConfiguredConnector,
    receipt: &ReceiptRow,
    found: &WebhookRecord,
) -> Result<Option<(OperationRow, Step)>, AppError> {
    let mut tx = state.db.begin_read().await?;
    let result_id = found.record.external_id.as_deref();
    let candidates = db::webhooks::steps_for(&mut tx, found.idempotency_key.as_deref(), result_id).await?;
    let mut matched = Vec::new();
    for (step_id, operation_id, step_name) in candidates {
        let Some(operation) = db::operations::by_id(&mut tx, operation_id).await? else { continue };
        if state.config.connector_of(&operation.workflow, &step_name) == Some(connector.name.as_str()) {
            let step = db::operations::step_by_name(&mut tx, operation.id, &step_name).await?;
            matched.extend(step.filter(|s| s.id == step_id).map(|s| (operation, s)));
        }
    }
    if matched.len() > 1 {
        tracing::warn!(connector = %connector.name, receipt = receipt.id, "webhook fits several steps: not applied");
    }
    Ok((matched.len() == 1).then(|| matched.remove(0)))
}

/// Judges the step by the record the webhook carries and applies it, unless a newer version was applied already
/// (then it is recorded as stale); either way with its audit event.
async fn apply(
    state: &AppState,
    connector: &ConfiguredConnector,
    actor: Actor,
    receipt: &ReceiptRow,
    (operation, step): (OperationRow, Step),
    seen: Record,
    version: i64,
) -> Result<(), AppError> {
    let (verdict, evidence) =
        connector.judge(&Finding::Found(vec![seen.clone()]), &step, operation.created_at, state.clock.now());
    let now = state.clock.now();
    let mut tx = state.db.begin_write().await?;
    if !db::webhooks::mark_processed(&mut tx, receipt.id, now).await? {
        return Ok(()); // another worker processed it
    }
    let applied = db::webhooks::advance_step_version(&mut tx, step.id, version).await?;
    let (outcome, action) =
        if applied { ("applied", AuditAction::StepReconciled) } else { ("stale", AuditAction::WebhookStaleIgnored) };
    let detail = if applied {
        SystemReason::WebhookApplied { version, verdict }
    } else {
        SystemReason::WebhookNotNewer { version }
    }
    .text();
    let event =
        NewEvent { receipt_id: receipt.id, step_id: Some(step.id), version: Some(version), outcome, detail: &detail };
    db::webhooks::insert_event(&mut tx, &event, now).await?;
    if applied {
        let evidence_json = serde_json::to_string(&evidence).map_err(|e| AppError::internal("evidence", e))?;
        let asked_by = format!("webhook:{}", connector.name);
        let new = NewReconciliation {
            step_id: step.id,
            connector: &connector.name,
            verdict: verdict.as_str(),
            external_id: evidence.external_id.as_deref(),
            evidence_json: &evidence_json,
            asked_by: &asked_by,
            recorded_by: None,
            records: evidence.records as i64,
        };
        db::reconciliations::insert(&mut tx, &new, now).await?;
        super::ai_attempts::from_records(&mut tx, connector, step.id, &[seen], now).await?;
    }
    let entry = AuditEntry::new(actor, action, ObjectType::Operation, &operation.process_id)
        .department(Some(&operation.department))
        .before(json!({"step": step.name, "verdict": step.latest_verdict}))
        .after(json!({"step": step.name, "verdict": verdict, "version": version, "webhook_id": receipt.webhook_id,
            "external_id": evidence.external_id}))
        .reason(&detail);
    record(&mut tx, entry, None, now).await?;
    tx.commit().await?;
    Ok(())
}

enum Outcome {
    Unreadable,
    Unmatched,
    NoConnector,
}

/// A receipt that concerns no step: recorded as processed with why.
async fn finish(state: &AppState, receipt: &ReceiptRow, actor: Actor, outcome: Outcome) -> Result<(), AppError> {
    let (outcome, detail) = match outcome {
        Outcome::Unreadable => ("unreadable", SystemReason::WebhookUnreadable),
        Outcome::Unmatched => ("unmatched", SystemReason::WebhookUnmatched),
        Outcome::NoConnector => ("unmatched", SystemReason::WebhookConnectorClosed),
    };
    let detail = &detail.text();
    let now = state.clock.now();
    let mut tx = state.db.begin_write().await?;
    if !db::webhooks::mark_processed(&mut tx, receipt.id, now).await? {
        return Ok(());
    }
    let event = NewEvent { receipt_id: receipt.id, step_id: None, version: None, outcome, detail };
    db::webhooks::insert_event(&mut tx, &event, now).await?;
    let entry = AuditEntry::new(
        actor,
        AuditAction::WebhookNotApplied,
        ObjectType::Webhook,
        format!("{}/{}", receipt.connector, receipt.webhook_id),
    )
    .reason(detail);
    record(&mut tx, entry, None, now).await?;
    tx.commit().await?;
    tracing::warn!(connector = %receipt.connector, webhook_id = %receipt.webhook_id, outcome, "webhook not applied");
    Ok(())
}

/// Purges raw bodies past the configured retention (the purge is audited); returns how many.
pub async fn purge_bodies(state: &AppState) -> Result<u64, AppError> {
    let now = state.clock.now();
    let days = state.config.webhook_body_retention_days;
    let mut tx = state.db.begin_write().await?;
    let purged = db::webhooks::purge_bodies(&mut tx, now - Duration::days(days as i64)).await?;
    if purged > 0 {
        let entry = AuditEntry::new(
            Actor::system(SystemActor::Housekeeping),
            AuditAction::WebhookBodiesPurged,
            ObjectType::Webhook,
            "bodies",
        )
        .after(json!({"purged": purged, "older_than_days": days}));
        record(&mut tx, entry, None, now).await?;
    }
    tx.commit().await?;
    Ok(purged)
}
