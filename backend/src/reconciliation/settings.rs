//! Connector settings from `rerun-gate.toml`, typed. The same parser validates the file at load (so a mistake
//! stops the start with its place in the file) and builds the connectors.
use serde::Deserialize;
use serde_json::{Map, Value};
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

const COMMON_KEYS: [&str; 9] = [
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

#[derive(Clone, Debug, PartialEq)]
#[allow(clippy::large_enum_variant)] // one per connector, built once from the configuration
pub enum KindSettings {
    Demo(DemoSettings),
    HttpJson(HttpJsonSettings),
}

#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DemoSettings {
    /// `orders`, `ai`, `mail` or `billing`.
    pub service: String,
}

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

pub const KINDS: [&str; 2] = ["demo", "http_json"];
const RECORD_STATUSES: [&str; 4] = ["done", "running", "not_done", "unclear"];

/// Splits a connector's settings into the common part and the kind's own, with a clear message on mistakes.
pub fn parse(kind: &str, settings: &BTreeMap<String, Value>) -> Result<(CommonSettings, KindSettings), String> {
    let (mut common, mut own) = (Map::new(), Map::new());
    for (key, value) in settings {
        let side = if COMMON_KEYS.contains(&key.as_str()) { &mut common } else { &mut own };
        side.insert(key.clone(), value.clone());
    }
    let own = Value::Object(own);
    let kind = match kind {
        "demo" => {
            let s: DemoSettings = serde_json::from_value(own).map_err(|e| e.to_string())?;
            if crate::demo::systems::Service::parse(&s.service).is_none() {
                return Err(format!("unknown demo service '{}' (known: orders, ai, mail, billing)", s.service));
            }
            // The demo systems keep every key: their "not found" is proof unless the file says otherwise.
            common.entry("not_found_proves_absence").or_insert(Value::Bool(true));
            KindSettings::Demo(s)
        }
        "http_json" => {
            let mut s: HttpJsonSettings = serde_json::from_value(own).map_err(|e| e.to_string())?;
            if let Some(preset) = s.preset.clone() {
                // The preset's rules apply unless the file says otherwise.
                for (key, value) in super::presets::apply(&preset, &mut s)? {
                    common.entry(key).or_insert(value);
                }
            }
            check_http_json(&s)?;
            KindSettings::HttpJson(s)
        }
        other => return Err(format!("unknown connector kind '{other}'")),
    };
    let common: CommonSettings = serde_json::from_value(Value::Object(common)).map_err(|e| e.to_string())?;
    if !(1..=120).contains(&common.timeout_seconds) {
        return Err("timeout_seconds must be between 1 and 120".into());
    }
    if common.retention_days < 1 || common.consistency_delay_seconds < 0 {
        return Err("retention_days must be at least 1 and consistency_delay_seconds not negative".into());
    }
    Ok((common, kind))
}

fn check_http_json(s: &HttpJsonSettings) -> Result<(), String> {
    let url = s.url.as_deref().ok_or("http_json needs `url` (or a `preset` with `base_url`)")?;
    let placeholders = ["{idempotency_key}", "{process_id}", "{result_id}"];
    if !placeholders.iter().any(|p| url.contains(p)) {
        return Err("url must contain {idempotency_key}, {process_id} or {result_id}".into());
    }
    let parsed = reqwest::Url::parse(&url.replace(['{', '}'], "")).map_err(|e| format!("url: {e}"))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err("url must be http:// or https://".into());
    }
    if let Some(bad) = s.status_map.values().find(|v| !RECORD_STATUSES.contains(&v.as_str())) {
        return Err(format!("status_map value '{bad}' must be one of {}", RECORD_STATUSES.join(", ")));
    }
    match s.auth.as_deref() {
        None | Some("bearer") | Some("none") => Ok(()),
        Some("header") if s.auth_header.is_some() => Ok(()),
        Some("header") => Err("auth = \"header\" needs auth_header".into()),
        Some(other) => Err(format!("auth '{other}' must be bearer, header or none")),
    }
}
