//! Connectors: how reconciliation asks an outside system what really happened to one step. One trait; the
//! kinds are `demo` (the built-in demo systems) and `http_json` (any JSON API, and the provider presets).
//! Connectors are built once from the configuration; credentials come only from environment variables.
pub mod demo;
pub mod http_json;
pub mod presets;
pub mod settings;
pub mod ssrf;

use super::demo_systems::DemoSystems;
use crate::domain::configuration::Config;
use crate::domain::reconciliation::Finding;
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

#[async_trait::async_trait]
pub trait Connector: Send + Sync {
    /// Asks the outside system about one step. Never fails: a failed look-up is a finding of its own.
    async fn look_up(&self, lookup: &Lookup) -> Finding;
}

/// A configured connector with the rules that judge its answers.
#[derive(Clone)]
pub struct ConfiguredConnector {
    pub name: String,
    pub common: CommonSettings,
    pub connector: Arc<dyn Connector>,
}

impl ConfiguredConnector {
    /// The look-up, cut off after the connector's timeout (a look-up that hangs proves nothing).
    pub async fn look_up(&self, lookup: &Lookup) -> Finding {
        let limit = Duration::from_secs(self.common.timeout_seconds);
        match tokio::time::timeout(limit, self.connector.look_up(lookup)).await {
            Ok(finding) => finding,
            Err(_) => Finding::Failed {
                reason: format!("no answer within {} s", self.common.timeout_seconds),
            },
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
            let connector: Arc<dyn Connector> = match kind {
                KindSettings::Demo(s) => Arc::new(demo::DemoConnector::new(
                    demo.clone(),
                    s,
                    common.not_found_proves_absence,
                )),
                KindSettings::HttpJson(s) => {
                    let credential = c.credential_envs.values().next().map(String::as_str);
                    Arc::new(http_json::HttpJsonConnector::new(s, &common, credential))
                }
            };
            out.insert(
                c.name.clone(),
                ConfiguredConnector {
                    name: c.name.clone(),
                    common,
                    connector,
                },
            );
        }
        Ok(Connectors(out))
    }

    pub fn get(&self, name: &str) -> Option<&ConfiguredConnector> {
        self.0.get(name)
    }
}
