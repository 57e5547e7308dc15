//! The `demo` connector kind, plugged in by the process: reads the demo systems' execution log, by idempotency
//! key or result ID, and is where drills practise (the demo systems meet a fault on purpose).
use super::systems::{DemoSystems, Service};
use crate::reconciliation::kinds::{BuildWith, ConnectorKind, KindReading};
use crate::reconciliation::{Connector, FieldsRead, Lookup, WebhookRecord};
use chrono::{DateTime, Utc};
use contract::AppError;
use domain::ai::Usage;
use domain::drills::Fault;
use domain::reconciliation::{Finding, LookupProblem, Record, RecordStatus};
use serde::Deserialize;
use serde_json::{Map, Value};
use std::sync::Arc;

/// `kind = "demo"`.
pub struct DemoKind;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DemoSettings {
    /// `orders`, `ai`, `mail` or `billing`.
    service: String,
}

impl ConnectorKind for DemoKind {
    fn name(&self) -> &'static str {
        "demo"
    }

    fn read(&self, own: Value) -> Result<KindReading, String> {
        let settings: DemoSettings = serde_json::from_value(own).map_err(|e| e.to_string())?;
        let service = Service::parse(&settings.service)
            .ok_or_else(|| format!("unknown demo service '{}' (known: orders, ai, mail, billing)", settings.service))?;
        // The demo systems keep every key: their "not found" is proof unless the file says otherwise.
        let presets = Map::from_iter([("not_found_proves_absence".to_string(), Value::Bool(true))]);
        let build = Box::new(move |with: &BuildWith<'_>| {
            let systems = DemoSystems::new(with.db.clone(), with.clock.clone());
            let authoritative = with.common.not_found_proves_absence;
            Arc::new(DemoConnector { systems, service, authoritative }) as Arc<dyn Connector>
        });
        Ok(KindReading { presets, ai: service == Service::Ai, build })
    }
}

struct DemoConnector {
    systems: DemoSystems,
    service: Service,
    authoritative: bool,
}

#[async_trait::async_trait]
impl Connector for DemoConnector {
    /// The demo systems keep the content they were sent.
    fn fields_read(&self) -> FieldsRead {
        FieldsRead::AsSent
    }

    /// The work done as the demo integration would do it, under this one fault only.
    async fn practise(&self, key: &str, process_id: &str, fault: Fault) -> Option<Result<String, AppError>> {
        let done = self.systems.execute_with(self.service, key, &Value::Null, Some(process_id), &[fault]).await;
        Some(done.map(|d| d.execution.id))
    }

    async fn look_up(&self, lookup: &Lookup) -> Finding {
        let asking = Some(lookup.process_id.as_str());
        let found = match self.systems.find_by_key(self.service, &lookup.idempotency_key, asking).await {
            Ok(None) => match &lookup.result_id {
                Some(id) => self.systems.find_by_id(self.service, id, asking).await,
                None => Ok(None),
            },
            other => other,
        };
        match found {
            Ok(Some(e)) => {
                Finding::Found(vec![record(self.service, Some(e.id.clone()), Some(e.created_at), e.status, &e.content)])
            }
            Ok(None) => Finding::NotFound { authoritative: self.authoritative },
            Err(AppError::Unauthorized) => Finding::Failed(LookupProblem::HttpStatus { status: 401 }),
            Err(AppError::TooManyRequests { .. }) => Finding::Failed(LookupProblem::HttpStatus { status: 429 }),
            Err(e) => Finding::Failed(LookupProblem::Other { detail: e.to_string() }),
        }
    }

    /// The demo systems' webhooks carry an execution log entry (`demo_systems::Execution`) as their record.
    fn webhook_record(&self, data: &Value) -> WebhookRecord {
        let text = |name: &str| data.get(name).and_then(Value::as_str);
        let at = text("created_at").and_then(|t| DateTime::parse_from_rfc3339(t).ok()).map(|t| t.with_timezone(&Utc));
        let status = text("status").unwrap_or("");
        let content = data.get("content").cloned().unwrap_or(Value::Null);
        WebhookRecord {
            idempotency_key: text("idempotency_key").map(str::to_string),
            record: record(self.service, text("id").map(str::to_string), at, status, &content),
        }
    }
}

fn record(service: Service, id: Option<String>, at: Option<DateTime<Utc>>, status: &str, content: &Value) -> Record {
    let status_kind = match status {
        "completed" => RecordStatus::Done,
        "in_progress" => RecordStatus::Running,
        _ => RecordStatus::Unclear,
    };
    Record {
        external_id: id,
        at,
        status_text: Some(status.to_string()),
        status: status_kind,
        fields: content.as_object().cloned().unwrap_or_default(),
        usage: (service == Service::Ai).then(|| demo_usage(status, content)),
    }
}

/// The demo AI's usage: the prompt grows with the content; output accrues while it generates.
fn demo_usage(status: &str, content: &Value) -> Usage {
    let input_tokens = 200 + content.to_string().len() as i64 / 2;
    let output_tokens = if status == "completed" { 180 } else { 60 };
    Usage { input_tokens, output_tokens }
}
