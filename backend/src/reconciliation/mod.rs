//! Connectors: how reconciliation asks an outside system what really happened to one step. One trait; the
//! kinds are `demo` (the built-in demo systems) and `http_json` (any JSON API, and the provider presets).
//! Connectors are built once from the configuration; credentials come only from environment variables.
pub mod http_json;
pub mod presets;
pub mod settings;
pub mod ssrf;

use super::demo::connector::DemoConnector;
use super::demo::systems::DemoSystems;
use chrono::{DateTime, Utc};
use domain::ai::Prices;
use domain::configuration::Config;
use domain::reconciliation::{AbsenceRules, Evidence, Finding, LookupProblem, Record, StepContext, Verdict, judge};
use domain::webhooks::Secret;
use serde_json::Map;
use serde_json::Value;
use settings::{CommonSettings, KindSettings};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

/// What a look-up knows of the step it asks about.
#[derive(Clone, Debug)]
pub struct Lookup {
    pub process_id: String,
    pub step: String,
    pub idempotency_key: String,
    pub result_id: Option<String>,
}

/// What an inbound webhook says about one step's record.
#[derive(Clone, Debug)]
pub struct WebhookRecord {
    pub idempotency_key: Option<String>,
    pub record: Record,
}

#[async_trait::async_trait]
pub trait Connector: Send + Sync {
    /// Asks the outside system about one step. Never fails: a failed look-up is a finding of its own.
    async fn look_up(&self, lookup: &Lookup) -> Finding;

    /// Reads the record a webhook carries, in the shape this provider's look-ups return.
    fn webhook_record(&self, record: &Value) -> WebhookRecord;

    /// Whether this provider's records carry fields that a step's content is compared with.
    fn compares_content(&self) -> bool;
}

/// A configured connector with the rules that judge its answers.
#[derive(Clone)]
pub struct ConfiguredConnector {
    pub name: String,
    pub common: CommonSettings,
    pub connector: Arc<dyn Connector>,
    /// Secrets that sign this provider's webhooks (several during a rotation); `None`: webhooks refused.
    pub webhook_secrets: Option<Vec<Secret>>,
    /// An AI provider: its generations are kept as attempts with usage and cost.
    pub ai: bool,
    pub prices: Option<Prices>,
}

impl ConfiguredConnector {
    /// What a finding means for this step, by this connector's rules (compared fields, absence rules).
    pub fn judge(
        &self,
        finding: &Finding,
        step: &domain::steps::Step,
        registered_at: DateTime<Utc>,
        now: DateTime<Utc>,
    ) -> (Verdict, Evidence) {
        let content = step.content_json.as_deref().and_then(|c| serde_json::from_str::<Map<String, Value>>(c).ok());
        let context = StepContext {
            content: content.as_ref(),
            compare: &self.common.compare,
            attempted_at: step.started_at.unwrap_or(registered_at),
        };
        let rules = AbsenceRules {
            consistency_delay_seconds: self.common.consistency_delay_seconds,
            retention_days: self.common.retention_days,
        };
        judge(finding, &context, rules, now)
    }

    /// The look-up, cut off after the connector's timeout (a look-up that hangs proves nothing).
    pub async fn look_up(&self, lookup: &Lookup) -> Finding {
        let limit = Duration::from_secs(self.common.timeout_seconds);
        match tokio::time::timeout(limit, self.connector.look_up(lookup)).await {
            Ok(finding) => finding,
            Err(_) => Finding::Failed(LookupProblem::NoAnswerWithin { seconds: self.common.timeout_seconds }),
        }
    }
}

/// Every configured connector by name.
#[derive(Clone, Default)]
pub struct Connectors(BTreeMap<String, ConfiguredConnector>);

impl Connectors {
    /// Builds the connectors of the configuration (already validated at load, so settings parse).
    pub fn build(config: &Config, demo: &DemoSystems) -> Result<Connectors, String> {
        let mut out = BTreeMap::new();
        for c in &config.connectors {
            let (common, kind) = settings::parse(&c.kind, &c.settings)?;
            let ai = match &kind {
                KindSettings::Demo(s) => s.service == "ai",
                KindSettings::HttpJson(s) => s.preset.as_deref() == Some("ai_responses"),
            } || common.input_yen_per_million.is_some();
            let prices = match (common.input_yen_per_million, common.output_yen_per_million) {
                (None, None) => None,
                (input, output) => Some(Prices {
                    input_yen_per_million: input.unwrap_or(0.0),
                    output_yen_per_million: output.unwrap_or(0.0),
                }),
            };
            let connector: Arc<dyn Connector> = match kind {
                KindSettings::Demo(s) => Arc::new(DemoConnector::new(demo.clone(), s, common.not_found_proves_absence)),
                KindSettings::HttpJson(s) => {
                    let credential = c.credential_envs.get("api_key_env").map(String::as_str);
                    Arc::new(http_json::HttpJsonConnector::new(s, &common, credential))
                }
            };
            let webhook_secrets = match c.credential_envs.get("webhook_secret_env") {
                Some(var) => webhook_secrets(&c.name, var)?,
                None => None,
            };
            let configured =
                ConfiguredConnector { name: c.name.clone(), common, connector, webhook_secrets, ai, prices };
            out.insert(c.name.clone(), configured);
        }
        Ok(Connectors(out))
    }

    pub fn get(&self, name: &str) -> Option<&ConfiguredConnector> {
        self.0.get(name)
    }

    /// Connectors that name a webhook secret variable which is not set, with the variable: their webhooks are
    /// refused. Only a serving process says so (a command-line call receives no webhooks).
    pub fn unsigned_webhooks<'c>(&self, config: &'c Config) -> Vec<(&'c str, &'c str)> {
        config
            .connectors
            .iter()
            .filter_map(|c| Some((c.name.as_str(), c.credential_envs.get("webhook_secret_env")?.as_str())))
            .filter(|(name, _)| self.get(name).is_some_and(|c| c.webhook_secrets.is_none()))
            .collect()
    }

    /// The connector of a workflow's step, if it has one.
    pub fn of_step(&self, config: &Config, workflow: &str, step: &str) -> Option<&ConfiguredConnector> {
        let definition = config.workflow(workflow)?.steps.iter().find(|s| s.name == step)?;
        self.get(definition.connector.as_deref()?)
    }
}

/// `a.b.0.c`: object keys and array indexes, as the settings name places in a JSON answer.
pub fn json_path<'v>(value: &'v Value, path: &str) -> Option<&'v Value> {
    path.split('.').try_fold(value, |v, part| match v {
        Value::Object(map) => map.get(part),
        Value::Array(items) => part.parse::<usize>().ok().and_then(|i| items.get(i)),
        _ => None,
    })
}

/// The webhook secrets from their variable. Unset: webhooks refused (`unsigned_webhooks` says so when serving);
/// malformed: start-up stops.
fn webhook_secrets(connector: &str, var: &str) -> Result<Option<Vec<Secret>>, String> {
    match std::env::var(var) {
        Ok(text) if !text.trim().is_empty() => {
            Secret::parse_list(&text).map(Some).map_err(|e| format!("connector '{connector}': {var}: {e}"))
        }
        _ => Ok(None),
    }
}
