//! Connectors against local fake providers that answer with the documented response shapes, and the SSRF
//! guard. Each verdict comes from a real HTTP exchange; only the provider is fake.
use crate::harness::TestApp;
use axum::extract::{Path, Query};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use backend::Clock;
use backend::reconciliation::Lookup;
use chrono::Duration;
use domain::reconciliation::{AbsenceRules, Evidence, StepContext, Verdict, judge};
use serde_json::{Map, Value, json};
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::harness::{FAKE_AI_KEY as AI_KEY, FAKE_MAIL_TOKEN as MAIL_TOKEN};

/// A fake provider on loopback; counts every request it receives.
struct FakeProvider {
    port: u16,
    hits: Arc<AtomicUsize>,
}

impl FakeProvider {
    async fn start() -> FakeProvider {
        let hits = Arc::new(AtomicUsize::new(0));
        let counter = hits.clone();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let app = Router::new()
            .route("/v1/responses/{id}", get(ai_response))
            .route("/v1/invoices/search", get(invoice_search))
            .route("/messages/outbound", get(mail_log))
            .route("/generic/{key}", get(move |path| generic(path, port)))
            .layer(axum::middleware::from_fn(move |request, next: axum::middleware::Next| {
                counter.fetch_add(1, Ordering::SeqCst);
                next.run(request)
            }));
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        FakeProvider { port, hits }
    }

    fn base(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    fn hits(&self) -> usize {
        self.hits.load(Ordering::SeqCst)
    }
}

/// An AI responses API with background mode: `GET /v1/responses/{id}`.
async fn ai_response(Path(id): Path<String>, headers: HeaderMap) -> Response {
    if headers.get("authorization").and_then(|v| v.to_str().ok()) != Some(&format!("Bearer {AI_KEY}")) {
        return (StatusCode::UNAUTHORIZED, Json(json!({"error": {"message": "Incorrect API key provided"}})))
            .into_response();
    }
    let status = id.strip_prefix("resp_").unwrap_or("");
    if !["queued", "in_progress", "completed", "failed", "cancelled", "incomplete"].contains(&status) {
        return (
            StatusCode::NOT_FOUND,
            Json(json!({"error": {"message": "No response found", "type": "invalid_request_error"}})),
        )
            .into_response();
    }
    Json(json!({"id": id, "object": "response", "created_at": 1764493200, "status": status, "background": true,
        "usage": {"input_tokens": 812, "output_tokens": 143, "total_tokens": 955}}))
    .into_response()
}

/// A billing API searchable by metadata: `GET /v1/invoices/search?query=metadata['idempotency_key']:'K'`.
async fn invoice_search(Query(query): Query<HashMap<String, String>>) -> Json<Value> {
    let q = query.get("query").cloned().unwrap_or_default();
    let key = q.strip_prefix("metadata['idempotency_key']:'").and_then(|r| r.strip_suffix('\'')).unwrap_or("");
    let invoice = |id: &str, status: &str, amount: i64| {
        json!({"id": id, "object": "invoice", "status": status, "amount_due": amount, "currency": "jpy",
            "created": 1764493200, "metadata": {"idempotency_key": key}})
    };
    let data = match key {
        "inv-paid" => vec![invoice("in_1", "paid", 4000)],
        "inv-changed" => vec![invoice("in_2", "open", 5000)],
        "inv-draft" => vec![invoice("in_3", "draft", 4000)],
        "inv-twice" => vec![invoice("in_4", "open", 4000), invoice("in_5", "open", 4000)],
        _ => vec![],
    };
    Json(json!({"object": "search_result", "data": data, "has_more": false, "url": "/v1/invoices/search"}))
}

/// A mail provider's message log: `GET /messages/outbound?metadata_idempotency_key=K`, token in a header.
async fn mail_log(Query(query): Query<HashMap<String, String>>, headers: HeaderMap) -> Response {
    if headers.get("x-server-token").and_then(|v| v.to_str().ok()) != Some(MAIL_TOKEN) {
        return (StatusCode::UNAUTHORIZED, Json(json!({"ErrorCode": 10, "Message": "Bad or missing server token"})))
            .into_response();
    }
    let messages = match query.get("metadata_idempotency_key").map(String::as_str) {
        Some("mail-sent") => vec![json!({"MessageID": "0ac29aee-e1cd-480d-b08d-4f48548ff48d", "Status": "Sent",
            "ReceivedAt": "2026-11-30T09:00:00+09:00", "Subject": "請求書のお知らせ"})],
        _ => vec![],
    };
    Json(json!({"TotalCount": messages.len(), "Messages": messages})).into_response()
}

/// A generic JSON API with the awkward answers: gone, broken, slow, and a redirect.
async fn generic(Path(key): Path<String>, port: u16) -> Response {
    match key.as_str() {
        "gone" => StatusCode::NOT_FOUND.into_response(),
        "boom" => (StatusCode::INTERNAL_SERVER_ERROR, "upstream exploded").into_response(),
        "slow" => {
            tokio::time::sleep(std::time::Duration::from_secs(3)).await;
            Json(json!({"state": "completed"})).into_response()
        }
        "moved" => (StatusCode::FOUND, [("location", format!("http://127.0.0.1:{port}/generic/ok"))]).into_response(),
        "not-json" => "<html>maintenance</html>".into_response(),
        _ => Json(json!({"state": "completed", "id": "g_1", "total": {"amount": 4000}})).into_response(),
    }
}

fn config(fake: &FakeProvider) -> backend::config::Config {
    let (base, port) = (fake.base(), fake.port);
    let text = format!(
        r#"
[[department]]
code = "sales"
name = "営業部"

[[connector]]
name = "ai"
kind = "http_json"
preset = "ai_responses"
base_url = "{base}"
allow_loopback = true
api_key_env = "RG_TEST_AI_KEY"

[[connector]]
name = "ai-wrong-key"
kind = "http_json"
preset = "ai_responses"
base_url = "{base}"
allow_loopback = true
api_key_env = "RG_TEST_WRONG_AI_KEY"

[[connector]]
name = "billing"
kind = "http_json"
preset = "billing_search"
base_url = "{base}"
allow_loopback = true

[[connector]]
name = "mail"
kind = "http_json"
preset = "mail_log"
base_url = "{base}"
allow_loopback = true
api_key_env = "RG_TEST_MAIL_TOKEN"

[[connector]]
name = "generic"
kind = "http_json"
url = "{base}/generic/{{idempotency_key}}"
status = "state"
external_id = "id"
fields = {{ amount = "total.amount" }}
status_map = {{ completed = "done" }}
not_found_proves_absence = true
allow_loopback = true
timeout_seconds = 1

[[connector]]
name = "generic-bare"
kind = "http_json"
url = "{base}/generic/{{idempotency_key}}"
status = "state"
external_id = "id"
status_map = {{ completed = "done" }}
allow_loopback = true

[[connector]]
name = "generic-hearsay"
kind = "http_json"
url = "{base}/generic/{{idempotency_key}}"
status = "state"
allow_loopback = true

[[connector]]
name = "no-credential"
kind = "http_json"
url = "{base}/generic/{{idempotency_key}}"
allow_loopback = true
api_key_env = "RG_TEST_NEVER_SET_VARIABLE"

[[connector]]
name = "guarded"
kind = "http_json"
url = "{base}/generic/{{idempotency_key}}"

[[connector]]
name = "guarded-mapped"
kind = "http_json"
url = "http://[::ffff:127.0.0.1]:{port}/generic/{{idempotency_key}}"

[[connector]]
name = "guarded-name"
kind = "http_json"
url = "http://localhost:{port}/generic/{{idempotency_key}}"

[[connector]]
name = "metadata"
kind = "http_json"
url = "http://169.254.169.254/latest/meta-data/{{process_id}}"
allow_loopback = true

[[workflow]]
name = "w"
department = "sales"
rerun_url = "https://integrations.example.com/rerun"
signing_secret_env = "RG_TEST_SECRET"

[[workflow.step]]
name = "s"
connector = "generic"
side_effect = true

[[workflow]]
name = "w-bare"
department = "sales"
rerun_url = "https://integrations.example.com/rerun"
signing_secret_env = "RG_TEST_SECRET"

[[workflow.step]]
name = "s"
connector = "generic-bare"
side_effect = true
"#
    );
    backend::config::parse(&text, "connectors-test.toml", &server::startup::connector_kinds())
        .expect("test configuration")
}

struct Rig {
    app: TestApp,
    fake: FakeProvider,
}

impl Rig {
    async fn start() -> Rig {
        let fake = FakeProvider::start().await;
        let app = TestApp::spawn_configured(|_| {}, config(&fake)).await;
        Rig { app, fake }
    }

    /// Looks the step up through the named connector and judges the answer, ten minutes after the attempt.
    async fn check(&self, connector: &str, key: &str, result_id: Option<&str>, amount: i64) -> (Verdict, Evidence) {
        self.check_at(connector, key, result_id, amount, Duration::minutes(10)).await
    }

    async fn check_at(
        &self,
        connector: &str,
        key: &str,
        result_id: Option<&str>,
        amount: i64,
        since: Duration,
    ) -> (Verdict, Evidence) {
        let c = self.app.state.connectors.get(connector).expect("configured connector");
        let lookup = Lookup {
            process_id: "P-1".into(),
            step: "s".into(),
            idempotency_key: key.into(),
            result_id: result_id.map(str::to_string),
        };
        let finding = c.look_up(&lookup).await;
        let content: Map<String, Value> = json!({"amount": amount}).as_object().unwrap().clone();
        let now = self.app.clock.now();
        let step = StepContext { content: Some(&content), compare: &c.common.compare, attempted_at: now - since };
        let rules = AbsenceRules {
            consistency_delay_seconds: c.common.consistency_delay_seconds,
            retention_days: c.common.retention_days,
        };
        judge(&finding, &step, rules, now)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_ai_responses_preset_maps_every_background_status_to_its_verdict() {
    let rig = Rig::start().await;
    for (id, expected) in [
        ("resp_queued", Verdict::InProgress),
        ("resp_in_progress", Verdict::InProgress),
        // A response's record carries nothing the step's content names: done, but not compared.
        ("resp_completed", Verdict::ExecutedNotCompared),
        ("resp_failed", Verdict::NotExecuted),
        ("resp_cancelled", Verdict::NotExecuted),
        ("resp_incomplete", Verdict::Unknown),
    ] {
        let (verdict, evidence) = rig.check("ai", "k", Some(id), 0).await;
        assert_eq!(verdict, expected, "{id}: {}", evidence.summary);
        assert_eq!(evidence.external_id.as_deref(), Some(id));
    }
    let (verdict, evidence) = rig.check("ai", "k", Some("resp_missing"), 0).await;
    assert_eq!(verdict, Verdict::Unknown, "a missing response proves nothing: {}", evidence.summary);
    let (verdict, evidence) = rig.check("ai", "k", None, 0).await;
    assert_eq!(verdict, Verdict::Unknown, "no result ID, no look-up: {}", evidence.summary);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_billing_search_preset_finds_matching_changed_draft_and_double_invoices() {
    let rig = Rig::start().await;
    assert_eq!(rig.check("billing", "inv-paid", None, 4000).await.0, Verdict::Executed);
    let (verdict, evidence) = rig.check("billing", "inv-changed", None, 4000).await;
    assert_eq!(verdict, Verdict::ExecutedMismatch);
    assert_eq!(evidence.compared[0].found, Some(json!(5000)));
    assert_eq!(rig.check("billing", "inv-draft", None, 4000).await.0, Verdict::InProgress);
    let (verdict, evidence) = rig.check("billing", "inv-twice", None, 4000).await;
    assert_eq!((verdict, evidence.records), (Verdict::Executed, 2));
    assert_eq!(rig.check("billing", "inv-none", None, 4000).await.0, Verdict::NotExecuted);
    let early = rig.check_at("billing", "inv-none", None, 4000, Duration::seconds(20)).await;
    assert_eq!(early.0, Verdict::Unknown, "inside the search's consistency delay: {}", early.1.summary);
    let forgotten = rig.check_at("billing", "inv-none", None, 4000, Duration::days(40)).await;
    assert_eq!(forgotten.0, Verdict::Unknown, "past the key retention: {}", forgotten.1.summary);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_mail_log_preset_finds_a_sent_message_and_finding_none_proves_nothing() {
    let rig = Rig::start().await;
    let (verdict, evidence) = rig.check("mail", "mail-sent", None, 0).await;
    assert_eq!(verdict, Verdict::ExecutedNotCompared, "the log keeps no amount: {}", evidence.summary);
    assert_eq!(evidence.content_not_in_record, vec!["amount"]);
    assert_eq!(evidence.external_id.as_deref(), Some("0ac29aee-e1cd-480d-b08d-4f48548ff48d"));
    assert_eq!(rig.check("mail", "mail-other", None, 0).await.0, Verdict::Unknown);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_generic_connector_reads_paths_and_a_404_proves_absence_only_where_configured() {
    let rig = Rig::start().await;
    let (verdict, evidence) = rig.check("generic", "ok", None, 4000).await;
    assert_eq!((verdict, evidence.external_id.as_deref()), (Verdict::Executed, Some("g_1")));
    assert_eq!(rig.check("generic", "ok", None, 5000).await.0, Verdict::ExecutedMismatch);
    assert_eq!(rig.check("generic", "gone", None, 4000).await.0, Verdict::NotExecuted);
    assert_eq!(
        rig.check("generic-hearsay", "gone", None, 4000).await.0,
        Verdict::Unknown,
        "a 404 that is not authoritative"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_timeouts_non_json_and_redirects_are_failed_look_ups_and_redirects_are_not_followed() {
    let rig = Rig::start().await;
    let (verdict, evidence) = rig.check("generic", "boom", None, 4000).await;
    assert_eq!(verdict, Verdict::LookupFailed);
    assert!(evidence.summary.contains("500"), "{}", evidence.summary);
    assert_eq!(rig.check("generic", "slow", None, 4000).await.0, Verdict::LookupFailed);
    assert_eq!(rig.check("generic", "not-json", None, 4000).await.0, Verdict::LookupFailed);
    let before = rig.fake.hits();
    let (verdict, evidence) = rig.check("generic", "moved", None, 4000).await;
    assert_eq!(verdict, Verdict::LookupFailed, "{}", evidence.summary);
    assert_eq!(rig.fake.hits(), before + 1, "the redirect target must not be asked");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_credential_or_a_wrong_one_fails_the_look_up_without_showing_any_secret() {
    let rig = Rig::start().await;
    let (verdict, evidence) = rig.check("no-credential", "ok", None, 4000).await;
    assert_eq!(verdict, Verdict::LookupFailed);
    assert!(evidence.summary.contains("RG_TEST_NEVER_SET_VARIABLE"), "{}", evidence.summary);
    let (verdict, evidence) = rig.check("ai-wrong-key", "k", Some("resp_completed"), 0).await;
    assert_eq!(verdict, Verdict::LookupFailed);
    assert!(evidence.summary.contains("401") && !evidence.summary.contains("canary"), "{}", evidence.summary);
    let settings = serde_json::to_string(&rig.app.state.config.connectors).unwrap();
    assert!(!settings.contains(AI_KEY) && !settings.contains(MAIL_TOKEN), "credentials never enter the configuration");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn loopback_mapped_loopback_a_name_for_loopback_and_metadata_are_refused_without_opt_in() {
    let rig = Rig::start().await;
    let before = rig.fake.hits();
    for connector in ["guarded", "guarded-mapped", "guarded-name", "metadata"] {
        let (verdict, evidence) = rig.check(connector, "ok", None, 4000).await;
        assert_eq!(verdict, Verdict::LookupFailed, "{connector}");
        assert!(evidence.summary.contains("not allowed"), "{connector}: {}", evidence.summary);
    }
    assert_eq!(rig.fake.hits(), before, "nothing reached the fake provider");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_configured_http_json_step_is_reconciled_through_the_app() {
    let rig = Rig::start().await;
    let token = rig.app.token("intake", &["sales"]).await;
    let body = json!({"process_id": "P-9", "workflow": "w", "department": "sales",
        "steps": [{"name": "s", "idempotency_key": "ok", "content": {"amount": 4000}}]});
    rig.app.api(reqwest::Method::POST, "/api/v1/operations", &token, Some("P-9"), Some(&body)).await;
    rig.app.user("sato", &["staff"], &["sales"]).await;
    let cookie = rig.app.sign_in("sato", crate::harness::PASSWORD).await;
    let answer = rig.app.call("board/reconcile", &[("process_id", "P-9")], Some(&cookie)).await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
    let operation = rig.app.api(reqwest::Method::GET, "/api/v1/operations/P-9", &token, None, None).await.json();
    assert_eq!(operation["steps"][0]["latest_verdict"], "executed");
    assert_eq!(operation["steps"][0]["reconciliation"]["connector"], "generic");
}

/// Issue 62: a connector that reads no field, and content under another name than the one the connector reads,
/// are said at registration (naming the connector's fields) and give "executed, content not compared".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn content_the_connector_cannot_compare_is_warned_of_at_registration_and_never_called_executed() {
    let rig = Rig::start().await;
    let token = rig.app.token("intake", &["sales"]).await;
    // The stand-in holds a record for the key "ok" (at each connector its own step).
    let register = |id: &'static str, workflow: &'static str, content: Value| {
        let key = if id == "P-12" { "fine" } else { "ok" };
        let body = json!({"process_id": id, "workflow": workflow, "department": "sales",
            "steps": [{"name": "s", "idempotency_key": key, "content": content}]});
        let (app, token) = (&rig.app, token.clone());
        async move { app.api(reqwest::Method::POST, "/api/v1/operations", &token, Some(id), Some(&body)).await.json() }
    };
    let renamed = register("P-10", "w", json!({"total": 4000})).await;
    assert_eq!(renamed["warnings"][0]["kind"], "step_content_not_read", "{renamed}");
    let message = renamed["warnings"][0]["message"].as_str().unwrap();
    assert!(message.contains("total") && message.contains("(amount)"), "names both sides: {message}");
    let bare = register("P-11", "w-bare", json!({"amount": 5000})).await;
    assert_eq!(bare["warnings"][0]["kind"], "connector_reads_no_field", "{bare}");
    let fine = register("P-12", "w", json!({"amount": 4000})).await;
    assert!(fine.get("warnings").is_none_or(|w| w.as_array().is_some_and(Vec::is_empty)), "{fine}");

    rig.app.user("sato", &["staff"], &["sales"]).await;
    let cookie = rig.app.sign_in("sato", crate::harness::PASSWORD).await;
    for (id, why) in [("P-10", "no_common_field"), ("P-11", "no_field_read")] {
        let answer = rig.app.call("board/reconcile", &[("process_id", id)], Some(&cookie)).await;
        assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
        let path = format!("/api/v1/operations/{id}");
        let operation = rig.app.api(reqwest::Method::GET, &path, &token, None, None).await.json();
        let step = &operation["steps"][0];
        assert_eq!(step["latest_verdict"], "executed_not_compared", "{id}: {step}");
        assert_eq!(step["reconciliation"]["evidence"]["basis"]["not_compared"], why, "{id}: {step}");
    }
}
