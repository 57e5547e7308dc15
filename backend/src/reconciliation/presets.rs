//! Provider presets for the `http_json` connector: the documented response shapes of widely used kinds of
//! provider, so a configuration only names the preset, the `base_url` and the credential variable.
//! Whatever the file sets itself wins over the preset.
use super::settings::HttpJsonSettings;
use serde_json::{Value, json};

pub const PRESETS: [&str; 3] = ["ai_responses", "billing_search", "mail_log"];

/// Fills the preset into the settings; returns the preset's default judging rules (common settings).
pub fn apply(preset: &str, s: &mut HttpJsonSettings) -> Result<Vec<(String, Value)>, String> {
    let base = s.base_url.clone().ok_or_else(|| format!("preset '{preset}' needs base_url"))?;
    let base = base.trim_end_matches('/');
    let (statuses, rules) = match preset {
        "ai_responses" => ai_responses(base, s),
        "billing_search" => billing_search(base, s),
        "mail_log" => mail_log(base, s),
        other => return Err(format!("unknown preset '{other}' (known: {})", PRESETS.join(", "))),
    };
    for (provider, ours) in statuses {
        s.status_map.entry(provider.to_string()).or_insert_with(|| ours.to_string());
    }
    Ok(rules.as_object().into_iter().flatten().map(|(k, v)| (k.clone(), v.clone())).collect())
}

/// A preset's provider statuses with ours, and its judging rules.
type Preset = (&'static [(&'static str, &'static str)], Value);

/// A setting the file left out takes the preset's value.
fn fill(field: &mut Option<String>, value: &str) {
    if field.is_none() {
        *field = Some(value.to_string());
    }
}

/// An AI responses API with background mode: `GET /v1/responses/{id}`, one object with `status`.
fn ai_responses(base: &str, s: &mut HttpJsonSettings) -> Preset {
    fill(&mut s.url, &format!("{base}/v1/responses/{{result_id}}"));
    fill(&mut s.status, "status");
    fill(&mut s.external_id, "id");
    fill(&mut s.at, "created_at");
    fill(&mut s.input_tokens, "usage.input_tokens");
    fill(&mut s.output_tokens, "usage.output_tokens");
    let statuses = &[
        ("queued", "running"),
        ("in_progress", "running"),
        ("completed", "done"),
        ("failed", "not_done"),
        ("cancelled", "not_done"),
        // Stopped part-way (e.g. token limit): output exists and was billed; a person decides.
        ("incomplete", "unclear"),
    ];
    // A missing response ID proves nothing about whether a generation ran.
    (statuses, json!({"not_found_proves_absence": false, "retention_days": 30}))
}

/// A billing API searchable by metadata: `GET /v1/invoices/search?query=…`, a list under `data`.
fn billing_search(base: &str, s: &mut HttpJsonSettings) -> Preset {
    let query = "query=metadata%5B%27idempotency_key%27%5D%3A%27{idempotency_key}%27";
    fill(&mut s.url, &format!("{base}/v1/invoices/search?{query}"));
    fill(&mut s.records, "data");
    fill(&mut s.status, "status");
    fill(&mut s.external_id, "id");
    fill(&mut s.at, "created");
    if s.fields.is_empty() {
        s.fields.insert("amount".into(), "amount_due".into());
    }
    let statuses =
        &[("draft", "running"), ("open", "done"), ("paid", "done"), ("uncollectible", "done"), ("void", "unclear")];
    // Search is eventually consistent (new objects appear within about a minute).
    (statuses, json!({"not_found_proves_absence": true, "consistency_delay_seconds": 60, "retention_days": 30}))
}

/// A mail provider's message log: `GET /messages/outbound?metadata_idempotency_key=…`, under `Messages`.
fn mail_log(base: &str, s: &mut HttpJsonSettings) -> Preset {
    let query = "count=50&offset=0&metadata_idempotency_key={idempotency_key}";
    fill(&mut s.url, &format!("{base}/messages/outbound?{query}"));
    fill(&mut s.records, "Messages");
    fill(&mut s.status, "Status");
    fill(&mut s.external_id, "MessageID");
    fill(&mut s.at, "ReceivedAt");
    if s.auth.is_none() {
        s.auth = Some("header".into());
        s.auth_header = Some("X-Server-Token".into());
    }
    let statuses = &[("Queued", "running"), ("Sent", "done"), ("Processed", "done")];
    // Message logs lag and are kept for a limited time: "not found" is not proof.
    (statuses, json!({"not_found_proves_absence": false, "consistency_delay_seconds": 300, "retention_days": 45}))
}
