//! Connector settings from `rerun-gate.toml`, typed: the ones every kind has, and `http_json`'s own (a plugged-in
//! kind reads its own, see `kinds`).
use serde::Deserialize;
use std::collections::BTreeMap;

/// Settings every connector kind has.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CommonSettings {
    /// Each look-up is cut off after this long.
    #[serde(default = "default_timeout")]
    pub timeout_seconds: u64,
    /// Records may take this long to become visible to look-ups; "not found" earlier proves nothing.
    #[serde(default)]
    pub consistency_delay_seconds: i64,
    /// How long the provider remembers an idempotency key.
    #[serde(default = "default_retention")]
    pub retention_days: i64,
    /// Whether "not found" for a key proves the step never ran at this provider.
    #[serde(default)]
    pub not_found_proves_absence: bool,
    /// The step content fields compared with the record; empty: every field both carry.
    #[serde(default)]
    pub compare: Vec<String>,
    /// Inbound webhooks: where the record is in the payload, and where its version is (the newest wins).
    #[serde(default = "default_webhook_record")]
    pub webhook_record: String,
    #[serde(default = "default_webhook_version")]
    pub webhook_version: String,
    /// AI generations: yen per million tokens, for the cost estimate of each attempt.
    #[serde(default)]
    pub input_yen_per_million: Option<f64>,
    #[serde(default)]
    pub output_yen_per_million: Option<f64>,
}

fn default_webhook_record() -> String {
    "data".into()
}

fn default_webhook_version() -> String {
    "data.version".into()
}

fn default_timeout() -> u64 {
    10
}

fn default_retention() -> i64 {
    30
}

pub const COMMON_KEYS: [&str; 9] = [
    "input_yen_per_million",
    "output_yen_per_million",
    "timeout_seconds",
    "consistency_delay_seconds",
    "retention_days",
    "not_found_proves_absence",
    "compare",
    "webhook_record",
    "webhook_version",
];

/// A generic JSON API: where to ask, and where in the answer the facts are.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HttpJsonSettings {
    /// A provider shape that fills in everything below but `base_url` (see `presets.rs`).
    #[serde(default)]
    pub preset: Option<String>,
    /// The provider's origin, for presets (`https://api.example.com`).
    #[serde(default)]
    pub base_url: Option<String>,
    /// URL template with `{idempotency_key}`, `{process_id}` or `{result_id}` (URL-encoded when filled in).
    #[serde(default)]
    pub url: Option<String>,
    /// Path to the array of records in the answer; absent: the answer is one record.
    #[serde(default)]
    pub records: Option<String>,
    /// Paths inside a record (dot-separated, numbers index arrays).
    #[serde(default)]
    pub status: Option<String>,
    #[serde(default)]
    pub external_id: Option<String>,
    #[serde(default)]
    pub at: Option<String>,
    /// AI providers: where the token counts are in a record.
    #[serde(default)]
    pub input_tokens: Option<String>,
    #[serde(default)]
    pub output_tokens: Option<String>,
    /// Step content field → path in the record, for the compared fields.
    #[serde(default)]
    pub fields: BTreeMap<String, String>,
    /// Provider status → `done`, `running`, `not_done` or `unclear`. A record without a mapped status is unclear.
    #[serde(default)]
    pub status_map: BTreeMap<String, String>,
    /// `bearer` (default when `api_key_env` is set), `header` (with `auth_header`) or `none`.
    #[serde(default)]
    pub auth: Option<String>,
    #[serde(default)]
    pub auth_header: Option<String>,
    /// Tests and the demo only: allow loopback addresses (everything else private stays refused).
    #[serde(default)]
    pub allow_loopback: bool,
    /// Inbound webhooks: the path of the idempotency key inside the record.
    #[serde(default = "default_webhook_key")]
    pub webhook_key: String,
}

fn default_webhook_key() -> String {
    "metadata.idempotency_key".into()
}
