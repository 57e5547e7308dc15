//! One POST of the rerun call to a workflow's `rerun_url`: no redirects, no proxy, outbound addresses checked,
//! cut off after the send timeout. The dispatcher signs it per Standard Webhooks; the conformance check also
//! sends it unsigned, wrongly signed and stale, to see the receiver refuse those.
use crate::reconciliation::http_json::describe;
use crate::reconciliation::ssrf;
use chrono::{DateTime, Utc};
use domain::configuration::WorkflowConfig;
use domain::reconciliation::redact;
use domain::webhooks::Secret;

/// The workflow's signing secret, from the variable its `signing_secret_env` names.
pub fn signing_secret(workflow: &WorkflowConfig) -> Result<Secret, String> {
    secret_from(&workflow.signing_secret_env)
}

/// The signing secret in the variable `var`.
pub fn secret_from(var: &str) -> Result<Secret, String> {
    std::env::var(var)
        .ok()
        .and_then(|s| Secret::parse(&s).ok())
        .ok_or_else(|| format!("the signing secret variable {var} is not set (or not a whsec_ secret)"))
}

pub struct Target<'a> {
    pub url: &'a str,
    pub allow_loopback: bool,
    pub timeout: std::time::Duration,
    /// A test call of the conformance check: marked in a header as well as by its body's `type`.
    pub test: bool,
}

/// The header that marks a test call (`rerun.test`): a receiver that reads headers only still knows.
pub const TEST_HEADER: &str = "rerun-gate-test";

pub enum Signing<'a> {
    /// `webhook-timestamp` = `at`, `webhook-signature` from `secret`.
    Signed { secret: &'a Secret, at: DateTime<Utc> },
    /// No signature headers at all.
    Unsigned,
}

pub struct Posted {
    pub status: u16,
    /// `Retry-After` in seconds, when the receiver asked to wait.
    pub retry_after: Option<i64>,
    /// The answer's first 4 KiB (a kit's receiver says what it did there).
    pub body: String,
}

pub enum Sent {
    /// Nothing reached the receiver (no connection): safe to try again with the same ID.
    NotSent(String),
    /// It may have arrived: an unknown outcome, for reconciliation to settle.
    NoAnswer(String),
}

const BODY_KEPT: usize = 4096;

/// Sends `body` as the rerun call `id` (`webhook-id` = `Idempotency-Key` = the rerun ID).
pub async fn post(target: &Target<'_>, id: &str, signing: Signing<'_>, body: &str) -> Result<Posted, Sent> {
    let url = reqwest::Url::parse(target.url).map_err(|e| Sent::NotSent(format!("rerun_url: {e}")))?;
    ssrf::check_url(&url, target.allow_loopback).map_err(Sent::NotSent)?;
    let client = ssrf::shared_client(target.allow_loopback).map_err(Sent::NotSent)?;
    let mut request = client
        .post(url)
        .timeout(target.timeout)
        .header("content-type", "application/json")
        .header("webhook-id", id)
        .header("idempotency-key", id);
    if target.test {
        request = request.header(TEST_HEADER, "true");
    }
    if let Signing::Signed { secret, at } = signing {
        let timestamp = at.timestamp();
        request = request
            .header("webhook-timestamp", timestamp.to_string())
            .header("webhook-signature", secret.sign(id, timestamp, body.as_bytes()));
    }
    let answer = request.body(body.to_string()).send().await;
    let answer = match answer {
        Ok(answer) => answer,
        Err(e) if e.is_connect() => return Err(Sent::NotSent(redact(&describe(&e)))),
        Err(e) => return Err(Sent::NoAnswer(redact(&describe(&e)))),
    };
    let status = answer.status().as_u16();
    let retry_after =
        answer.headers().get("retry-after").and_then(|v| v.to_str().ok()).and_then(|v| v.trim().parse().ok());
    Ok(Posted { status, retry_after, body: first_bytes(answer).await })
}

/// The answer's beginning; the status is the answer, so a body cut short or lost changes nothing about it.
async fn first_bytes(mut answer: reqwest::Response) -> String {
    let mut kept = Vec::new();
    while kept.len() < BODY_KEPT {
        match answer.chunk().await {
            Ok(Some(chunk)) => kept.extend_from_slice(&chunk),
            _ => break,
        }
    }
    kept.truncate(BODY_KEPT);
    String::from_utf8_lossy(&kept).into_owned()
}
