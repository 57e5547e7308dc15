//! The `http_json` connector: one GET to a URL built from the step, facts read from the JSON answer by path.
//! The credential is read from its environment variable once, kept in a `SecretString`, and never logged.
use super::connector::{Connector, FieldsRead, Lookup, WebhookRecord, json_path as get};
use super::kinds::{BuildWith, ConnectorKind, KindReading};
use super::settings::{CommonSettings, HttpJsonSettings};
use super::ssrf;
use chrono::{DateTime, TimeZone, Utc};
use domain::ai::Usage;
use domain::reconciliation::{Finding, LookupProblem, Record, RecordStatus};
use reqwest::{Client, StatusCode, Url};
use secrecy::{ExposeSecret, SecretString};
use serde_json::{Map, Value};
use std::sync::Arc;
use std::time::Duration;

/// The `http_json` kind: any JSON API, or a provider preset (`presets`).
pub struct HttpJson;

impl ConnectorKind for HttpJson {
    fn name(&self) -> &'static str {
        "http_json"
    }

    fn read(&self, own: Value) -> Result<KindReading, String> {
        let mut s: HttpJsonSettings = serde_json::from_value(own).map_err(|e| e.to_string())?;
        let presets = match s.preset.clone() {
            Some(preset) => super::presets::apply(&preset, &mut s)?.into_iter().collect(),
            None => Map::new(),
        };
        check(&s)?;
        let ai = s.preset.as_deref() == Some("ai_responses");
        let build = Box::new(move |with: &BuildWith<'_>| {
            let credential = with.credential_envs.get("api_key_env").map(String::as_str);
            Arc::new(HttpJsonConnector::new(s, with.common, credential)) as Arc<dyn Connector>
        });
        Ok(KindReading { presets, ai, build })
    }
}

const RECORD_STATUSES: [&str; 4] = ["done", "running", "not_done", "unclear"];

fn check(s: &HttpJsonSettings) -> Result<(), String> {
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

pub struct HttpJsonConnector {
    settings: HttpJsonSettings,
    authoritative: bool,
    credential: Option<SecretString>,
    /// Set when the connector cannot work at all (e.g. its credential variable is missing).
    broken: Option<String>,
    client: Option<Client>,
}

impl HttpJsonConnector {
    pub fn new(settings: HttpJsonSettings, common: &CommonSettings, credential_env: Option<&str>) -> Self {
        let credential =
            credential_env.and_then(|var| std::env::var(var).ok()).filter(|v| !v.is_empty()).map(SecretString::from);
        let mut broken = match (credential_env, &credential) {
            (Some(var), None) => Some(format!("the credential variable {var} is not set")),
            _ => None,
        };
        let client = match ssrf::client(settings.allow_loopback, Duration::from_secs(common.timeout_seconds)) {
            Ok(client) => Some(client),
            Err(e) => {
                broken = Some(format!("no HTTP client: {e}"));
                None
            }
        };
        HttpJsonConnector { authoritative: common.not_found_proves_absence, settings, credential, broken, client }
    }

    /// The URL for this step, or why there is none (e.g. a `{result_id}` template and no result ID yet).
    fn url(&self, lookup: &Lookup) -> Result<Url, Finding> {
        let template = self.settings.url.as_deref().unwrap_or_default();
        let encode = |s: &str| url::form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>();
        if template.contains("{result_id}") && lookup.result_id.is_none() {
            return Err(Finding::NoLookup(LookupProblem::NoResultId));
        }
        let filled = template
            .replace("{idempotency_key}", &encode(&lookup.idempotency_key))
            .replace("{process_id}", &encode(&lookup.process_id))
            .replace("{result_id}", &encode(lookup.result_id.as_deref().unwrap_or_default()));
        let other = |detail: String| Finding::Failed(LookupProblem::Other { detail });
        let url = Url::parse(&filled).map_err(|e| other(format!("bad URL: {e}")))?;
        ssrf::check_url(&url, self.settings.allow_loopback).map_err(other)?;
        Ok(url)
    }

    fn records(&self, body: &Value) -> Vec<Record> {
        let items: Vec<&Value> = match &self.settings.records {
            Some(path) => match get(body, path) {
                Some(Value::Array(items)) => items.iter().collect(),
                _ => Vec::new(),
            },
            None => vec![body],
        };
        items.into_iter().map(|item| self.record(item)).collect()
    }

    fn record(&self, item: &Value) -> Record {
        let text = |path: &Option<String>| path.as_deref().and_then(|p| get(item, p)).and_then(as_text);
        let status_text = text(&self.settings.status);
        let status = match status_text.as_deref().and_then(|s| self.settings.status_map.get(s)).map(String::as_str) {
            Some("done") => RecordStatus::Done,
            Some("running") => RecordStatus::Running,
            Some("not_done") => RecordStatus::NotDone,
            _ => RecordStatus::Unclear,
        };
        let fields: Map<String, Value> = self
            .settings
            .fields
            .iter()
            .filter_map(|(ours, path)| get(item, path).map(|v| (ours.clone(), v.clone())))
            .collect();
        let at = self.settings.at.as_deref().and_then(|p| get(item, p)).and_then(as_time);
        let tokens = |path: &Option<String>| path.as_deref().and_then(|p| get(item, p)).and_then(Value::as_i64);
        let usage = match (tokens(&self.settings.input_tokens), tokens(&self.settings.output_tokens)) {
            (None, None) => None,
            (input, output) => Some(Usage { input_tokens: input.unwrap_or(0), output_tokens: output.unwrap_or(0) }),
        };
        Record { external_id: text(&self.settings.external_id), at, status_text, status, fields, usage }
    }
}

#[async_trait::async_trait]
impl Connector for HttpJsonConnector {
    fn fields_read(&self) -> FieldsRead {
        match self.settings.fields.keys().cloned().collect::<Vec<_>>() {
            names if names.is_empty() => FieldsRead::Nothing,
            names => FieldsRead::These(names),
        }
    }

    fn webhook_record(&self, record: &Value) -> WebhookRecord {
        let key = get(record, &self.settings.webhook_key).and_then(as_text);
        WebhookRecord { idempotency_key: key, record: self.record(record) }
    }

    async fn look_up(&self, lookup: &Lookup) -> Finding {
        if let Some(reason) = &self.broken {
            return Finding::Failed(LookupProblem::Other { detail: reason.clone() });
        }
        let Some(client) = &self.client else {
            return Finding::Failed(LookupProblem::Other { detail: "no HTTP client".into() });
        };
        let url = match self.url(lookup) {
            Ok(url) => url,
            Err(finding) => return finding,
        };
        let mut request = client.get(url).header("accept", "application/json");
        if let Some(secret) = &self.credential {
            request = match (self.settings.auth.as_deref(), &self.settings.auth_header) {
                (Some("none"), _) => request,
                (Some("header"), Some(header)) => request.header(header.as_str(), secret.expose_secret()),
                _ => request.bearer_auth(secret.expose_secret()),
            };
        }
        let answer = match request.send().await {
            Ok(answer) => answer,
            // The error text names the host and the cause, never the request headers.
            Err(e) => {
                return Finding::Failed(LookupProblem::Other { detail: describe(&e) });
            }
        };
        let status = answer.status();
        if status == StatusCode::NOT_FOUND {
            return Finding::NotFound { authoritative: self.authoritative };
        }
        if !status.is_success() {
            return Finding::Failed(LookupProblem::HttpStatus { status: status.as_u16() });
        }
        let body: Value = match answer.json().await {
            Ok(body) => body,
            Err(_) => {
                return Finding::Failed(LookupProblem::NotJson);
            }
        };
        match self.records(&body) {
            records if records.is_empty() => Finding::NotFound { authoritative: self.authoritative },
            records => Finding::Found(records),
        }
    }
}

fn as_text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// RFC 3339 text or Unix seconds, the two ways providers send times.
fn as_time(v: &Value) -> Option<DateTime<Utc>> {
    match v {
        Value::String(s) => DateTime::parse_from_rfc3339(s).ok().map(|t| t.with_timezone(&Utc)),
        Value::Number(n) => n.as_i64().and_then(|secs| Utc.timestamp_opt(secs, 0).single()),
        _ => None,
    }
}

/// A transport error in words: what failed and its deepest cause, without the URL or any header.
pub(crate) fn describe(e: &reqwest::Error) -> String {
    let kind = if e.is_timeout() {
        "timed out"
    } else if e.is_connect() {
        "could not connect"
    } else {
        "request failed"
    };
    let mut cause = String::new();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        cause = s.to_string();
        source = s.source();
    }
    if cause.is_empty() { kind.to_string() } else { format!("{kind}: {cause}") }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn paths_reach_into_objects_and_arrays() {
        let body = json!({"data": [{"id": "in_1", "meta": {"amount": 4000}}]});
        assert_eq!(get(&body, "data.0.id"), Some(&json!("in_1")));
        assert_eq!(get(&body, "data.0.meta.amount"), Some(&json!(4000)));
        assert_eq!(get(&body, "data.1.id"), None);
        assert_eq!(as_time(&json!(1764493200)).unwrap().to_rfc3339(), "2025-11-30T09:00:00+00:00");
    }
}
