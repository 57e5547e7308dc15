//! The conformance check of a workflow's rerun endpoint: five test calls (`rerun.test`, which receivers built
//! with the client kits verify and deduplicate but never act on), each judged by `domain::conformance`, and
//! the check itself recorded in the audit trail (test calls went to an integration).
use super::audit::record;
use super::rerun_post::{self, Posted, Sent, Signing, Target};
use crate::AppState;
use base64::Engine;
use chrono::Duration;
use contract::AppError;
use contract::admin::ReceiverCheck;
use contract::rerun_call::{RerunCall, RerunCallType};
use domain::audit::{Actor, AuditEntry, ObjectType};
use domain::audit_action::AuditAction;
use domain::configuration::WorkflowConfig;
use domain::conformance::{Heard, Probe, judge};
use domain::invalid::{Field, Invalid, Rule};
use domain::webhooks::Secret;
use rand::RngCore;
use serde_json::json;

/// Where the test calls go and how they are signed: by default the workflow's `rerun_url` and the secret in its
/// `signing_secret_env`; the command line may name another address and another variable.
#[derive(Default)]
pub struct CheckOptions<'a> {
    pub url: Option<&'a str>,
    pub secret_env: Option<&'a str>,
}

/// Sends the test calls, one after another.
pub async fn check(
    state: &AppState,
    actor: Actor,
    request_id: Option<&str>,
    workflow: &str,
    options: CheckOptions<'_>,
) -> Result<ReceiverCheck, AppError> {
    let unknown = || Invalid::new(Rule::Unknown, format!("unknown workflow '{workflow}'"));
    let workflow = state.config.workflow(workflow).ok_or_else(|| AppError::invalid(Field::Workflow, unknown()))?;
    let secret = rerun_post::secret_from(options.secret_env.unwrap_or(&workflow.signing_secret_env))
        .map_err(|message| AppError::invalid(Field::Workflow, Invalid::new(Rule::Malformed, message)))?;
    let url = options.url.unwrap_or(&workflow.rerun_url).to_string();
    let (allow_loopback, timeout) = (workflow.rerun_allow_loopback, state.server.dispatch_timeout);
    let target = Target { url: &url, allow_loopback, timeout, test: true };
    let (delivered_id, other) = (test_id(), other_secret());
    let mut results = Vec::new();
    for probe in Probe::ALL {
        let id = if matches!(probe, Probe::Delivered | Probe::Repeated) { delivered_id.clone() } else { test_id() };
        let body =
            serde_json::to_string(&test_call(workflow, &id, state)).map_err(|e| AppError::internal("serialize", e))?;
        let now = state.clock.now();
        let signing = match probe {
            Probe::Unsigned => Signing::Unsigned,
            Probe::WronglySigned => Signing::Signed { secret: &other, at: now },
            Probe::Stale => Signing::Signed { secret: &secret, at: now - Duration::seconds(Probe::STALE_SECONDS) },
            Probe::Delivered | Probe::Repeated => Signing::Signed { secret: &secret, at: now },
        };
        let heard = match rerun_post::post(&target, &id, signing, &body).await {
            Ok(Posted { status, body, .. }) => Heard::answer(status, &body),
            Err(Sent::NotSent(why)) => Heard::NotSent { why },
            Err(Sent::NoAnswer(why)) => Heard::NoAnswer { why },
        };
        results.push(judge(probe, heard));
    }
    let checked = ReceiverCheck { workflow: workflow.name.clone(), url, results };
    let all_met = checked.all_met();
    let now = state.clock.now();
    let mut tx = state.db.begin_write().await?;
    let entry = AuditEntry::new(actor, AuditAction::WorkflowReceiverChecked, ObjectType::Workflow, &workflow.name)
        .department(Some(&workflow.department))
        .after(json!({"url": checked.url, "all_met": all_met, "results": checked.results}));
    record(&mut tx, entry, request_id, now).await?;
    tx.commit().await?;
    Ok(checked)
}

/// A test call's ID: marked as one wherever a receiver logs it.
fn test_id() -> String {
    format!("test-{}", uuid::Uuid::new_v4())
}

/// A secret nobody holds, for the wrongly signed call.
fn other_secret() -> Secret {
    let mut bytes = [0u8; 32];
    rand::thread_rng().fill_bytes(&mut bytes);
    Secret::parse(&base64::engine::general_purpose::STANDARD.encode(bytes)).expect("32 bytes make a secret")
}

/// A test call lists no steps: a receiver that ignores the call's type then still has nothing to run.
fn test_call(workflow: &WorkflowConfig, id: &str, state: &AppState) -> RerunCall {
    RerunCall {
        kind: RerunCallType::Test,
        rerun_id: id.to_string(),
        process_id: "conformance-check".into(),
        workflow: workflow.name.clone(),
        steps: Vec::new(),
        requested_by: "Rerun Gate conformance check".into(),
        approved_by: Vec::new(),
        requested_by_id: 0,
        approved_by_ids: Vec::new(),
        approved_at: Some(state.clock.now()),
    }
}
