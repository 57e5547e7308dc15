//! Connector kinds: how a kind reads its own settings and builds its connectors. `http_json` is built in
//! (`built_in_kinds`); a process may plug in more at start-up (the demo's outside systems are one), through this
//! same interface.
use super::connector::Connector;
use super::settings::CommonSettings;
use crate::clock::Clock;
use crate::db::Db;
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::sync::Arc;

pub trait ConnectorKind: Send + Sync {
    /// The name a configuration writes as `kind`.
    fn name(&self) -> &'static str;

    /// Reads the kind's own settings (the common ones are read by reconciliation), with a clear message on
    /// mistakes. Runs when the configuration is loaded, so it needs nothing but the settings.
    fn read(&self, own: Value) -> Result<KindReading, String>;
}

/// A kind's settings, read: what they preset, and how to build the connector once the process runs.
pub struct KindReading {
    /// Common settings this kind gives unless the file says otherwise (a preset's judging rules).
    pub presets: Map<String, Value>,
    /// An AI provider: its generations are kept as attempts with usage and cost.
    pub ai: bool,
    pub build: Build,
}

/// Builds the connector once the process runs.
pub type Build = Box<dyn FnOnce(&BuildWith<'_>) -> Arc<dyn Connector> + Send>;

/// What a connector is built with: its common settings, the names of its credential variables, and the
/// process's database and clock (for a kind whose outside system keeps its state there, as the demo's does).
pub struct BuildWith<'a> {
    pub common: &'a CommonSettings,
    pub credential_envs: &'a BTreeMap<String, String>,
    pub db: &'a Db,
    pub clock: &'a Arc<dyn Clock>,
}

/// The kinds a process knows (`reconciliation::built_in_kinds`, and what the process plugs in).
#[derive(Clone, Default)]
pub struct ConnectorKinds(Vec<Arc<dyn ConnectorKind>>);

impl ConnectorKinds {
    /// These kinds and one more (a kind of the same name is replaced).
    pub fn with(mut self, kind: impl ConnectorKind + 'static) -> Self {
        self.0.retain(|k| k.name() != kind.name());
        self.0.push(Arc::new(kind));
        self
    }

    pub fn get(&self, name: &str) -> Option<&dyn ConnectorKind> {
        self.0.iter().find(|k| k.name() == name).map(|k| k.as_ref())
    }

    pub fn names(&self) -> Vec<&'static str> {
        self.0.iter().map(|k| k.name()).collect()
    }
}
