//! Connectors: how reconciliation asks an outside system what really happened to one step. One trait; the
//! built-in kind is `http_json` (any JSON API, and the provider presets), and a process may plug in more
//! (`kinds`). Connectors are built once from the configuration; credentials come only from environment variables.
pub mod connector;
pub mod http_json;
pub mod kinds;
pub mod presets;
pub mod settings;
pub mod ssrf;

pub use connector::{Connector, FieldsRead, Lookup, WebhookRecord, json_path};

use crate::clock::Clock;
use crate::db::Db;
use chrono::{DateTime, Utc};
use domain::ai::Prices;
use domain::configuration::Config;
use domain::reconciliation::{AbsenceRules, Evidence, Finding, LookupProblem, StepContext, Verdict, judge};
use domain::webhooks::Secret;
use kinds::{BuildWith, ConnectorKinds, KindReading};
use serde_json::{Map, Value};
use settings::{COMMON_KEYS, CommonSettings};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

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
    pub fn build(
        config: &Config,
        kinds: &ConnectorKinds,
        db: &Db,
        clock: &Arc<dyn Clock>,
    ) -> Result<Connectors, String> {
        let mut out = BTreeMap::new();
        for c in &config.connectors {
            let (common, kind) = read_settings(kinds, &c.kind, &c.settings)?;
            let ai = kind.ai || common.input_yen_per_million.is_some();
            let prices = match (common.input_yen_per_million, common.output_yen_per_million) {
                (None, None) => None,
                (input, output) => Some(Prices {
                    input_yen_per_million: input.unwrap_or(0.0),
                    output_yen_per_million: output.unwrap_or(0.0),
                }),
            };
            let connector =
                (kind.build)(&BuildWith { common: &common, credential_envs: &c.credential_envs, db, clock });
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

    /// Side-effecting steps whose connector reads no field of its records (workflow, step, connector): whatever
    /// such a step's record says, its verdict can only be "executed, content not compared". Said at start-up.
    pub fn steps_compared_with_nothing<'c>(&self, config: &'c Config) -> Vec<(&'c str, &'c str, &'c str)> {
        let steps = config.workflows.iter().flat_map(|w| w.steps.iter().map(move |s| (w, s)));
        steps
            .filter(|(_, step)| step.side_effect)
            .filter_map(|(w, step)| Some((w.name.as_str(), step.name.as_str(), step.connector.as_deref()?)))
            .filter(|(_, _, c)| self.get(c).is_some_and(|c| c.connector.fields_read() == FieldsRead::Nothing))
            .collect()
    }

    /// The connector of a workflow's step, if it has one.
    pub fn of_step(&self, config: &Config, workflow: &str, step: &str) -> Option<&ConfiguredConnector> {
        let definition = config.workflow(workflow)?.steps.iter().find(|s| s.name == step)?;
        self.get(definition.connector.as_deref()?)
    }
}

/// Splits a connector's settings into the common part and the kind's own, with a clear message on mistakes. The
/// same reading validates the file at load (so a mistake stops the start with its place in the file) and builds
/// the connectors.
pub fn read_settings(
    kinds: &ConnectorKinds,
    kind: &str,
    settings: &BTreeMap<String, Value>,
) -> Result<(CommonSettings, KindReading), String> {
    let (mut common, mut own) = (Map::new(), Map::new());
    for (key, value) in settings {
        let side = if COMMON_KEYS.contains(&key.as_str()) { &mut common } else { &mut own };
        side.insert(key.clone(), value.clone());
    }
    let known = kinds.get(kind).ok_or_else(|| format!("unknown connector kind '{kind}'"))?;
    let reading = known.read(Value::Object(own))?;
    for (key, value) in &reading.presets {
        common.entry(key.clone()).or_insert_with(|| value.clone());
    }
    let common: CommonSettings = serde_json::from_value(Value::Object(common)).map_err(|e| e.to_string())?;
    if !(1..=120).contains(&common.timeout_seconds) {
        return Err("timeout_seconds must be between 1 and 120".into());
    }
    if common.retention_days < 1 || common.consistency_delay_seconds < 0 {
        return Err("retention_days must be at least 1 and consistency_delay_seconds not negative".into());
    }
    Ok((common, reading))
}

/// The connector kinds every process knows.
pub fn built_in_kinds() -> ConnectorKinds {
    ConnectorKinds::default().with(http_json::HttpJson)
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
