//! Reconciliation: ask each step's outside system what really happened and record the verdict with its
//! evidence. Runs when an operation stalls, on demand from the detail page, and before a dispatch.
//! The look-ups happen outside any transaction; their results and audit events are written in one.
use super::Caller;
use super::audit::record_all;
use crate::db::operations::OperationRow;
use crate::db::reconciliations::NewReconciliation;
use crate::reconciliation::{ConfiguredConnector, Lookup};
use crate::{AppState, db};
use chrono::{DateTime, Utc};
use contract::AppError;
use domain::audit::{Actor, AuditEntry, ObjectType};
use domain::audit_action::AuditAction;
use domain::conflict::Conflict;
use domain::reconciliation::{Evidence, Finding, Record, Verdict};
use domain::rights::Act;
use domain::steps::Step;
use serde_json::json;

/// One step's outcome of a reconciliation.
#[derive(Clone, Debug, PartialEq)]
pub struct StepVerdict {
    pub step: String,
    pub connector: String,
    pub verdict: Verdict,
    pub evidence: Evidence,
}

/// Staff (or a manager) of the operation's department asks for a fresh look at the outside systems.
pub async fn on_demand(state: &AppState, caller: &Caller, process_id: &str) -> Result<Vec<StepVerdict>, AppError> {
    let operation = {
        let mut tx = state.db.begin_read().await?;
        db::operations::by_process_id(&mut tx, process_id).await?.ok_or(AppError::NotFound)?
    };
    caller.check_act(Act::Reconcile, &operation.department)?;
    reconcile(state, &operation, caller.actor(), caller.request_id.as_deref()).await
}

/// Looks up every step that has a connector and records the verdicts; `asked_by` is kept with each result.
pub async fn reconcile(
    state: &AppState,
    operation: &OperationRow,
    actor: Actor,
    request_id: Option<&str>,
) -> Result<Vec<StepVerdict>, AppError> {
    let looked = look(state, operation).await?;
    if !looked.steps.is_empty() {
        let mut tx = state.db.begin_write().await?;
        looked.record(&mut tx, actor, request_id).await?;
        tx.commit().await?;
    }
    Ok(looked.verdicts())
}

/// What the outside systems said about an operation's steps, not yet recorded.
pub struct Looked<'a> {
    operation: OperationRow,
    steps: Vec<LookedStep<'a>>,
    at: DateTime<Utc>,
}

struct LookedStep<'a> {
    step: Step,
    connector: &'a ConfiguredConnector,
    records: Vec<Record>,
    verdict: StepVerdict,
}

/// Asks each step's outside system, outside any transaction.
pub async fn look<'a>(state: &'a AppState, operation: &OperationRow) -> Result<Looked<'a>, AppError> {
    let steps = {
        let mut tx = state.db.connection().await?;
        db::operations::steps(&mut tx, operation.id).await?
    };
    let Some(workflow) = state.config.workflow(&operation.workflow) else {
        return Err(AppError::conflict(
            Conflict::WorkflowNotConfigured,
            format!("workflow '{}' is no longer in the configuration", operation.workflow),
        ));
    };
    let mut looked = Vec::new();
    for step in steps {
        let connector_name = workflow.steps.iter().find(|d| d.name == step.name).and_then(|d| d.connector.clone());
        let Some(connector) = connector_name.as_deref().and_then(|n| state.connectors.get(n)) else {
            continue;
        };
        let finding = connector.look_up(&lookup(operation, &step)).await;
        let (verdict, evidence) = connector.judge(&finding, &step, operation.created_at, state.clock.now());
        let records = match finding {
            Finding::Found(records) => records,
            _ => Vec::new(),
        };
        let verdict = StepVerdict { step: step.name.clone(), connector: connector.name.clone(), verdict, evidence };
        looked.push(LookedStep { step, connector, records, verdict });
    }
    Ok(Looked { operation: operation.clone(), steps: looked, at: state.clock.now() })
}

impl Looked<'_> {
    pub fn verdicts(&self) -> Vec<StepVerdict> {
        self.steps.iter().map(|s| s.verdict.clone()).collect()
    }

    /// Records each verdict with its evidence and audit event in the caller's transaction.
    pub async fn record(&self, tx: &mut db::Conn, actor: Actor, request_id: Option<&str>) -> Result<(), AppError> {
        Looked::record_all(tx, &[self], actor, request_id).await
    }

    /// Records the look-ups of several operations (a batch of dispatches) in the caller's transaction: their
    /// evidence, verdicts and audit events in a few statements, not a few for each step.
    pub async fn record_all(
        tx: &mut db::Conn,
        looks: &[&Looked<'_>],
        actor: Actor,
        request_id: Option<&str>,
    ) -> Result<(), AppError> {
        let asked_by = format!("{}:{}", actor.kind.as_str(), actor.label);
        let mut steps: Vec<(DateTime<Utc>, &OperationRow, &LookedStep)> = Vec::new();
        for look in looks {
            steps.extend(look.steps.iter().map(|step| (look.at, &look.operation, step)));
        }
        let mut evidence = Vec::with_capacity(steps.len());
        for (_, _, step) in &steps {
            evidence
                .push(serde_json::to_string(&step.verdict.evidence).map_err(|e| AppError::internal("evidence", e))?);
        }
        let mut news = Vec::with_capacity(steps.len());
        for ((at, _, LookedStep { step, verdict: v, .. }), evidence_json) in steps.iter().zip(&evidence) {
            let new = NewReconciliation {
                step_id: step.id,
                connector: &v.connector,
                verdict: v.verdict.as_str(),
                external_id: v.evidence.external_id.as_deref(),
                evidence_json,
                asked_by: &asked_by,
                recorded_by: None,
                records: v.evidence.records as i64,
            };
            news.push((new, *at));
        }
        db::reconciliations::insert_all(tx, &news).await?;
        let mut entries = Vec::with_capacity(steps.len());
        for (at, operation, LookedStep { step, connector, records, verdict: v }) in &steps {
            super::ai_attempts::from_records(tx, connector, step.id, records, *at).await?;
            let entry = AuditEntry::new(
                actor.clone(),
                AuditAction::StepReconciled,
                ObjectType::Operation,
                &operation.process_id,
            )
            .department(Some(&operation.department))
            .before(json!({"step": step.name, "verdict": step.latest_verdict}))
            .after(json!({
                "step": step.name,
                "connector": v.connector,
                "verdict": v.verdict,
                "external_id": v.evidence.external_id,
                "summary": v.evidence.summary,
            }));
            entries.push((entry, *at));
        }
        record_all(tx, entries, request_id).await?;
        Ok(())
    }
}

fn lookup(operation: &OperationRow, step: &Step) -> Lookup {
    Lookup {
        process_id: operation.process_id.clone(),
        step: step.name.clone(),
        idempotency_key: step.idempotency_key.clone(),
        result_id: step.result_id.clone(),
    }
}
