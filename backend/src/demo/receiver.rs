//! The demo integration's rerun endpoint (`POST /demo/rerun`, demo mode): it checks the signature with the demo
//! workflows' secrets before reading the body, acts once per `webhook-id`, performs each listed step through the
//! demo outside systems with its original idempotency key and content, and reports the steps back through the
//! ingestion service, as a real integration would — so the whole loop runs in `make run`.
use super::systems::{DemoSystems, Service};
use crate::services::{api_clients::ApiClient, step_events};
use crate::{AppState, db};
use contract::AppError;
use contract::operations::{ReportedError, StepEvent};
use contract::rerun_call::{RerunCall, RerunCallStep, RerunCallType, RerunOutcome};
use domain::operations::StepEventType;
use domain::stall::ErrorClass;
use domain::webhooks::{Headers, Secret, verify};
use serde_json::Value;

/// What the call came to: `Done` for a new rerun (performed in the background), `Duplicate` for a repeat of a
/// `webhook-id`, `Test` for a conformance check's call (verified and remembered, nothing done).
pub async fn receive(state: &AppState, headers: &Headers<'_>, body: &[u8]) -> Result<RerunOutcome, AppError> {
    let secrets: Vec<Secret> =
        state.config.workflows.iter().filter_map(|w| crate::services::rerun_post::signing_secret(w).ok()).collect();
    verify(&secrets, headers, body, state.clock.now()).map_err(|_| AppError::Unauthorized)?;
    let rerun: RerunCall = serde_json::from_slice(body).map_err(|e| AppError::BadRequest(e.to_string()))?;
    let mut tx = state.db.begin_write().await?;
    let new = db::demo_systems::remember_rerun(&mut tx, headers.id.unwrap_or_default(), state.clock.now()).await?;
    tx.commit().await?;
    if !new {
        return Ok(RerunOutcome::Duplicate);
    }
    if rerun.kind == RerunCallType::Test {
        return Ok(RerunOutcome::Test);
    }
    {
        let state = state.clone();
        tokio::spawn(async move {
            if let Err(error) = perform(&state, &rerun).await {
                tracing::error!(process_id = %rerun.process_id, %error, "the demo integration could not rerun");
            }
        });
    }
    Ok(RerunOutcome::Done)
}

async fn perform(state: &AppState, rerun: &RerunCall) -> Result<(), AppError> {
    let client = {
        let mut tx = state.db.begin_read().await?;
        let row = db::api_clients::by_name(&mut tx, "demo-integration").await?.ok_or(AppError::NotFound)?;
        let departments = db::api_clients::department_codes(&mut tx, row.id).await?;
        ApiClient { id: row.id, name: row.name, departments, purpose: row.purpose }
    };
    let outside = DemoSystems::new(state.db.clone(), state.clock.clone());
    for step in &rerun.steps {
        let found = {
            let mut tx = state.db.connection().await?;
            db::operations::step_in_operation(&mut tx, &rerun.process_id, &step.name)
                .await?
                .ok_or(AppError::NotFound)?
        };
        let service = demo_service(state, &found.workflow, &step.name)
            .ok_or_else(|| AppError::BadRequest(format!("step {} has no demo outside system", step.name)))?;
        let content: Value =
            found.step.content_json.as_deref().and_then(|c| serde_json::from_str(c).ok()).unwrap_or(Value::Null);
        let seq = found.step.last_seq.unwrap_or(0);
        report(state, &client, rerun, step, event(seq + 1, StepEventType::Started, None, None)).await?;
        match outside.execute(service, &step.idempotency_key, &content, Some(&rerun.process_id)).await {
            Ok(done) => {
                let succeeded = event(seq + 2, StepEventType::Succeeded, Some(done.execution.id), None);
                report(state, &client, rerun, step, succeeded).await?;
            }
            // As an integration would: the gate hears what the outside system answered, then the run stops.
            Err(refused) => {
                let error = ReportedError { class: error_class(&refused), message: refused.to_string() };
                report(state, &client, rerun, step, event(seq + 2, StepEventType::Failed, None, Some(error))).await?;
                return Ok(());
            }
        }
    }
    Ok(())
}

/// The class an integration gives what the demo outside system answered.
fn error_class(refused: &AppError) -> ErrorClass {
    match refused {
        AppError::Unauthorized => ErrorClass::AuthExpired,
        AppError::TooManyRequests { .. } => ErrorClass::RateLimited,
        AppError::Conflict { .. } | AppError::Validation(_) => ErrorClass::Validation,
        _ => ErrorClass::ServerError,
    }
}

fn demo_service(state: &AppState, workflow: &str, step: &str) -> Option<Service> {
    let name = state.config.workflow(workflow)?.steps.iter().find(|s| s.name == step)?.connector.clone()?;
    let connector = state.config.connectors.iter().find(|c| c.name == name && c.kind == "demo")?;
    Service::parse(connector.settings.get("service")?.as_str()?)
}

async fn report(
    state: &AppState,
    client: &ApiClient,
    rerun: &RerunCall,
    step: &RerunCallStep,
    event: StepEvent,
) -> Result<(), AppError> {
    step_events::report(state, client, &rerun.process_id, &step.name, event).await.map(drop)
}

fn event(seq: i64, kind: StepEventType, result_id: Option<String>, error: Option<ReportedError>) -> StepEvent {
    StepEvent { seq, kind, result_id, error, at: None, usage: None }
}
