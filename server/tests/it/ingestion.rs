//! The ingestion API contract (SPEC "Ingestion API") and QUALITY 8, 10, 18.
use crate::harness::{Answer, TestApp};
use backend::Clock;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

fn order(process_id: &str, amount: i64) -> Value {
    json!({
        "process_id": process_id,
        "workflow": "order-intake",
        "department": "sales",
        "business_key": "ORDER-4000",
        "content": {"order_id": "ORDER-4000", "amount": amount, "currency": "JPY"},
        "steps": [
            {"name": "register_order", "idempotency_key": format!("{process_id}:register_order"),
             "content": {"amount": amount, "currency": "JPY"}},
            {"name": "ai_summary", "idempotency_key": format!("{process_id}:ai_summary"),
             "content": {"order_id": "ORDER-4000"}}
        ]
    })
}

async fn register(app: &TestApp, token: &str, key: &str, body: &Value) -> Answer {
    app.api(Method::POST, "/api/v1/operations", token, Some(key), Some(body)).await
}

async fn event(app: &TestApp, token: &str, process_id: &str, step: &str, body: Value) -> Answer {
    let path = format!("/api/v1/operations/{process_id}/steps/{step}/events");
    app.api(Method::POST, &path, token, None, Some(&body)).await
}

fn problem_type(answer: &Answer) -> String {
    assert_eq!(answer.headers["content-type"], "application/problem+json", "{}", answer.body);
    answer.json()["type"].as_str().unwrap().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn registering_an_operation_answers_201_with_every_step_not_started_and_no_flag() {
    let app = TestApp::spawn().await;
    let token = app.token("intake", &["sales"]).await;
    let answer = register(&app, &token, "k-1", &order("ORD-1", 4000)).await;
    assert_eq!(answer.status, StatusCode::CREATED, "{}", answer.body);
    let body = answer.json();
    assert_eq!(body["status"], "running");
    assert_eq!(body["steps"][0]["name"], "register_order");
    assert_eq!(body["steps"][0]["state"], "not_started");
    assert_eq!(body["steps"][1]["idempotency_key"], "ORD-1:ai_summary");
    assert!(body["steps"][0]["completed_at"].is_null());
    assert!(app.audit_actions().await.contains(&"operation.registered".to_string()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_same_key_and_body_again_replays_the_stored_answer() {
    let app = TestApp::spawn().await;
    let token = app.token("intake", &["sales"]).await;
    let first = register(&app, &token, "k-1", &order("ORD-1", 4000)).await;
    // the same content in another key order is the same request
    let reordered: Value = serde_json::from_str(&order("ORD-1", 4000).to_string()).unwrap();
    let again = register(&app, &token, "k-1", &reordered).await;
    assert_eq!(again.status, StatusCode::CREATED);
    assert_eq!(again.headers["idempotency-replayed"], "true");
    assert_eq!(again.body, first.body);
    assert!(first.headers.get("idempotency-replayed").is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twenty_parallel_identical_registrations_make_one_operation_and_identical_answers() {
    let app = TestApp::spawn().await;
    let token = app.token("intake", &["sales"]).await;
    let body = order("ORD-PAR", 4000);
    let answers = futures::future::join_all((0..20).map(|_| register(&app, &token, "k-par", &body))).await;
    for answer in &answers {
        assert_eq!(answer.status, StatusCode::CREATED, "{}", answer.body);
        assert_eq!(answer.body, answers[0].body);
    }
    let registered = app.audit_actions().await.iter().filter(|a| *a == "operation.registered").count();
    assert_eq!(registered, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_same_key_with_another_amount_is_refused_and_changes_nothing() {
    let app = TestApp::spawn().await;
    let token = app.token("intake", &["sales"]).await;
    let first = register(&app, &token, "k-1", &order("ORD-1", 4000)).await;
    let other = register(&app, &token, "k-1", &order("ORD-1", 5000)).await;
    assert_eq!(other.status, StatusCode::CONFLICT);
    assert!(problem_type(&other).ends_with("idempotency-key-mismatch"));
    let stored = app.api(Method::GET, "/api/v1/operations/ORD-1", &token, None, None).await;
    assert_eq!(stored.body, first.body);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_still_being_processed_answers_409_in_flight() {
    let app = TestApp::spawn().await;
    let token = app.token("intake", &["sales"]).await;
    let body = order("ORD-1", 4000);
    // Someone holds the key right now (the first request is still running).
    let client = backend::services::api_clients::authenticate(&app.state, &token).await.unwrap().unwrap();
    let now = app.clock.now();
    let mut tx = app.db().begin_write().await.unwrap();
    let fp = domain::fingerprint::fingerprint(&body);
    assert!(
        backend::db::idempotency::claim(&mut tx, client.id, "k-1", &fp, now, now + chrono::Duration::days(1))
            .await
            .unwrap()
    );
    tx.commit().await.unwrap();
    let answer = register(&app, &token, "k-1", &body).await;
    assert_eq!(answer.status, StatusCode::CONFLICT);
    assert!(problem_type(&answer).ends_with("idempotency-key-in-flight"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_process_id_registered_under_another_key_is_a_conflict() {
    let app = TestApp::spawn().await;
    let token = app.token("intake", &["sales"]).await;
    register(&app, &token, "k-1", &order("ORD-1", 4000)).await;
    let again = register(&app, &token, "k-2", &order("ORD-1", 4000)).await;
    assert_eq!(again.status, StatusCode::CONFLICT);
    assert!(problem_type(&again).ends_with("process-id-exists"));
    // The refused key is free again: the sender may correct the request and retry with it.
    let corrected = register(&app, &token, "k-2", &order("ORD-2", 4000)).await;
    assert_eq!(corrected.status, StatusCode::CREATED, "{}", corrected.body);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_registration_without_idempotency_key_is_a_bad_request() {
    let app = TestApp::spawn().await;
    let token = app.token("intake", &["sales"]).await;
    let answer = app.api(Method::POST, "/api/v1/operations", &token, None, Some(&order("ORD-1", 4000))).await;
    assert_eq!(answer.status, StatusCode::BAD_REQUEST);
    assert!(answer.json()["detail"].as_str().unwrap().contains("Idempotency-Key"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_departments_operation_does_not_exist_for_a_token() {
    let app = TestApp::spawn().await;
    let sales = app.token("sales-intake", &["sales"]).await;
    let billing = app.token("billing-run", &["billing"]).await;
    let refused = register(&app, &billing, "k-1", &order("ORD-1", 4000)).await;
    assert_eq!(refused.status, StatusCode::NOT_FOUND);
    register(&app, &sales, "k-1", &order("ORD-1", 4000)).await;
    let read = app.api(Method::GET, "/api/v1/operations/ORD-1", &billing, None, None).await;
    assert_eq!(read.status, StatusCode::NOT_FOUND);
    let write = event(&app, &billing, "ORD-1", "register_order", json!({"seq": 1, "type": "started"})).await;
    assert_eq!(write.status, StatusCode::NOT_FOUND);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_token_a_wrong_token_or_a_token_in_the_url_is_401() {
    let app = TestApp::spawn().await;
    let token = app.token("intake", &["sales"]).await;
    let none = app.http.get(format!("{}/api/v1/operations/ORD-1", app.url)).send().await.unwrap();
    assert_eq!(none.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(none.headers()["www-authenticate"], "Bearer");
    let wrong = app.api(Method::GET, "/api/v1/operations/ORD-1", "rg_not-a-token", None, None).await;
    assert_eq!(wrong.status, StatusCode::UNAUTHORIZED);
    let in_url =
        app.http.get(format!("{}/api/v1/operations/ORD-1?access_token={token}", app.url)).send().await.unwrap();
    assert_eq!(in_url.status(), StatusCode::UNAUTHORIZED);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revoked_token_stops_working() {
    let app = TestApp::spawn().await;
    let token = app.token("intake", &["sales"]).await;
    let client = backend::services::api_clients::authenticate(&app.state, &token).await.unwrap().unwrap();
    backend::services::api_clients::revoke(
        &app.state,
        domain::audit::Actor::system(domain::audit::SystemActor::CommandLine),
        client.id,
        None,
    )
    .await
    .unwrap();
    let answer = register(&app, &token, "k-1", &order("ORD-1", 4000)).await;
    assert_eq!(answer.status, StatusCode::UNAUTHORIZED);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_older_step_event_never_overwrites_a_newer_one() {
    let app = TestApp::spawn().await;
    let token = app.token("intake", &["sales"]).await;
    register(&app, &token, "k-1", &order("ORD-1", 4000)).await;
    let newer = event(
        &app,
        &token,
        "ORD-1",
        "register_order",
        json!({"seq": 3, "type": "failed",
        "error": {"class": "timeout", "message": "no answer in 30 s"}}),
    )
    .await;
    assert_eq!(newer.json()["applied"], true, "{}", newer.body);
    let older = event(&app, &token, "ORD-1", "register_order", json!({"seq": 2, "type": "started"})).await;
    assert_eq!(older.status, StatusCode::OK);
    assert_eq!(older.json()["applied"], false);
    assert_eq!(older.json()["step"]["state"], "failed");
    let same =
        event(&app, &token, "ORD-1", "register_order", json!({"seq": 3, "type": "succeeded", "result_id": "x"})).await;
    assert_eq!(same.json()["applied"], false);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_heartbeat_shows_liveness_and_never_makes_the_steps_next_report_stale() {
    let app = TestApp::spawn().await;
    let token = app.token("intake", &["sales"]).await;
    register(&app, &token, "k-1", &order("ORD-1", 4000)).await;
    event(&app, &token, "ORD-1", "register_order", json!({"seq": 1, "type": "started"})).await;
    let beat = event(&app, &token, "ORD-1", "register_order", json!({"seq": 5, "type": "heartbeat"})).await;
    assert_eq!(beat.json()["applied"], true, "{}", beat.body);
    assert_eq!(beat.json()["step"]["last_seq"], 1, "a heartbeat's seq is not the step's");
    let done =
        event(&app, &token, "ORD-1", "register_order", json!({"seq": 2, "type": "succeeded", "result_id": "o-1"}))
            .await;
    assert_eq!(done.json()["applied"], true, "the success after the heartbeat is not lost: {}", done.body);
    assert_eq!(done.json()["step"]["state"], "succeeded");
    let late = event(&app, &token, "ORD-1", "register_order", json!({"seq": 9, "type": "heartbeat"})).await;
    assert_eq!(
        (late.json()["applied"].as_bool(), late.json()["step"]["state"].as_str()),
        (Some(false), Some("succeeded"))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_error_class_is_refused_naming_the_classes_and_changes_nothing() {
    let app = TestApp::spawn().await;
    let token = app.token("intake", &["sales"]).await;
    register(&app, &token, "k-1", &order("ORD-1", 4000)).await;
    let typo = json!({"seq": 1, "type": "failed", "error": {"class": "server_eror", "message": "503"}});
    let answer = event(&app, &token, "ORD-1", "register_order", typo).await;
    assert_eq!(answer.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", answer.body);
    assert!(
        answer.body.contains("server_eror") && answer.body.contains("`server_error`, `unavailable`"),
        "{}",
        answer.body
    );
    let step = app.api(Method::GET, "/api/v1/operations/ORD-1", &token, None, None).await.json()["steps"][0].clone();
    assert_eq!((step["state"].as_str(), step["last_seq"].as_i64()), (Some("not_started"), None));
    for class in ["validation", "other", "result_unknown"] {
        let kind = if class == "result_unknown" { "unknown" } else { "failed" };
        let known = json!({"seq": 2, "type": kind, "error": {"class": class, "message": "x"}});
        assert_eq!(event(&app, &token, "ORD-1", "ai_summary", known).await.status, StatusCode::OK, "{class}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_step_the_operation_does_not_have_is_named_with_the_steps_it_has_and_a_bad_token_says_what_to_do() {
    let app = TestApp::spawn().await;
    let token = app.token("intake", &["sales"]).await;
    register(&app, &token, "k-1", &order("ORD-1", 4000)).await;
    let typo = event(&app, &token, "ORD-1", "register_ordr", json!({"seq": 1, "type": "started"})).await;
    assert_eq!(typo.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", typo.body);
    assert!(typo.body.contains("its steps are register_order, ai_summary"), "{}", typo.body);
    let unknown = event(&app, &token, "ORD-404", "register_order", json!({"seq": 1, "type": "started"})).await;
    assert_eq!(unknown.status, StatusCode::NOT_FOUND, "an unknown operation stays not found");
    let billing = app.token("billing-intake", &["billing"]).await;
    let elsewhere = event(&app, &billing, "ORD-1", "register_ordr", json!({"seq": 1, "type": "started"})).await;
    assert_eq!(elsewhere.status, StatusCode::NOT_FOUND, "another department's operation tells nothing of its steps");

    let wrong = register(&app, "rg_not-a-token", "k-2", &order("ORD-2", 1)).await;
    assert_eq!(wrong.status, StatusCode::UNAUTHORIZED);
    assert_eq!(problem_type(&wrong), "/problems/invalid-token");
    assert_eq!(wrong.headers["www-authenticate"], "Bearer error=\"invalid_token\"");
    assert!(wrong.json()["detail"].as_str().unwrap().contains("server token create"), "{}", wrong.body);
    let none = app.http.post(format!("{}/api/v1/operations", app.url)).json(&order("ORD-3", 1)).send().await.unwrap();
    assert_eq!(none.status(), StatusCode::UNAUTHORIZED);
    let body: Value = none.json().await.unwrap();
    assert_eq!(body["type"], "/problems/token-missing", "{body}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn success_sets_the_completion_flag_and_the_last_one_completes_the_operation() {
    let app = TestApp::spawn().await;
    let token = app.token("intake", &["sales"]).await;
    register(&app, &token, "k-1", &order("ORD-1", 4000)).await;
    event(&app, &token, "ORD-1", "register_order", json!({"seq": 1, "type": "started"})).await;
    let done =
        event(&app, &token, "ORD-1", "register_order", json!({"seq": 2, "type": "succeeded", "result_id": "order-77"}))
            .await;
    assert_eq!(done.json()["step"]["result_id"], "order-77");
    assert!(done.json()["step"]["completed_at"].is_string());
    let mid = app.api(Method::GET, "/api/v1/operations/ORD-1", &token, None, None).await.json();
    assert_eq!(mid["status"], "running");
    event(&app, &token, "ORD-1", "ai_summary", json!({"seq": 1, "type": "succeeded", "result_id": "resp_1"})).await;
    let end = app.api(Method::GET, "/api/v1/operations/ORD-1", &token, None, None).await.json();
    assert_eq!(end["status"], "completed");
    assert_eq!(end["steps"][0]["attempts"], 1);
    // A late failure cannot take the flag away.
    let late = event(
        &app,
        &token,
        "ORD-1",
        "register_order",
        json!({"seq": 9, "type": "failed",
        "error": {"class": "timeout", "message": "late"}}),
    )
    .await;
    assert_eq!(late.json()["applied"], false);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_operation_with_the_same_business_key_is_flagged_as_a_possible_duplicate() {
    let app = TestApp::spawn().await;
    let token = app.token("intake", &["sales"]).await;
    register(&app, &token, "k-1", &order("ORD-1", 4000)).await;
    let second = register(&app, &token, "k-2", &order("ORD-2", 4000)).await;
    assert_eq!(second.json()["possible_duplicate_of"], "ORD-1");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_workflows_missing_steps_and_bad_events_get_clear_422s() {
    let app = TestApp::spawn().await;
    let token = app.token("intake", &["sales"]).await;
    let mut body = order("ORD-1", 4000);
    body["workflow"] = json!("nope");
    let answer = register(&app, &token, "k-1", &body).await;
    assert_eq!(answer.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(answer.body.contains("unknown workflow 'nope'"), "{}", answer.body);
    let mut body = order("ORD-1", 4000);
    body["steps"].as_array_mut().unwrap().pop();
    let answer = register(&app, &token, "k-2", &body).await;
    assert!(answer.body.contains("steps must be exactly"), "{}", answer.body);
    register(&app, &token, "k-3", &order("ORD-1", 4000)).await;
    let answer = event(&app, &token, "ORD-1", "register_order", json!({"seq": 1, "type": "exploded"})).await;
    assert_eq!(answer.status, StatusCode::UNPROCESSABLE_ENTITY);
    let answer = event(&app, &token, "ORD-1", "register_order", json!({"seq": 1, "type": "failed"})).await;
    assert!(answer.body.contains("needs an error"), "{}", answer.body);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_openapi_document_describes_the_three_routes() {
    let app = TestApp::spawn().await;
    let doc: Value = app.http.get(format!("{}/api/openapi.json", app.url)).send().await.unwrap().json().await.unwrap();
    let paths = doc["paths"].as_object().unwrap();
    assert!(paths.contains_key("/api/v1/operations"));
    assert!(paths.contains_key("/api/v1/operations/{process_id}"));
    assert!(paths.contains_key("/api/v1/operations/{process_id}/steps/{step}/events"));
    assert!(doc["components"]["securitySchemes"]["bearer"].is_object());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idempotency_records_are_purged_after_the_retention_window_and_not_before() {
    use backend::services::idempotency::purge_expired;
    let app = TestApp::spawn().await;
    let token = app.token("intake", &["sales"]).await;
    register(&app, &token, "k-1", &order("ORD-1", 4000)).await;
    app.clock.advance(chrono::Duration::days(29));
    assert_eq!(purge_expired(&app.state).await.unwrap(), 0);
    let replay = register(&app, &token, "k-1", &order("ORD-1", 4000)).await;
    assert_eq!(replay.headers["idempotency-replayed"], "true");
    app.clock.advance(chrono::Duration::days(2));
    assert_eq!(purge_expired(&app.state).await.unwrap(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_events_for_one_step_end_at_the_highest_seq_and_each_applied_one_is_audited_once() {
    let app = TestApp::spawn().await;
    let token = app.token("intake", &["sales"]).await;
    register(&app, &token, "k-1", &order("ORD-1", 4000)).await;
    let events = (1..=20).map(|seq| {
        let body = json!({"seq": seq, "type": if seq % 2 == 0 { "started" } else { "unknown" }});
        event(&app, &token, "ORD-1", "register_order", body)
    });
    let answers = futures::future::join_all(events).await;
    assert!(answers.iter().all(|a| a.status == StatusCode::OK), "every event is answered 200");
    let applied = answers.iter().filter(|a| a.json()["applied"] == true).count();
    let final_step =
        app.api(Method::GET, "/api/v1/operations/ORD-1", &token, None, None).await.json()["steps"][0].clone();
    assert_eq!(final_step["last_seq"], 20);
    let audited = app.audit_actions().await.iter().filter(|a| a.starts_with("step.")).count();
    assert_eq!(audited, applied);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn content_that_is_not_a_json_object_is_refused_with_422_and_registers_nothing() {
    let app = TestApp::spawn().await;
    let token = app.token("intake", &["sales"]).await;
    let mut body = order("ORD-1", 4000);
    body["content"] = json!(5);
    let answer = register(&app, &token, "k-1", &body).await;
    assert_eq!(answer.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", answer.body);
    assert_eq!(answer.json()["errors"][0]["field"], "content");
    let mut body = order("ORD-1", 4000);
    body["steps"][1]["content"] = json!(["not", "an", "object"]);
    let answer = register(&app, &token, "k-2", &body).await;
    assert_eq!(answer.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", answer.body);
    let read = app.api(Method::GET, "/api/v1/operations/ORD-1", &token, None, None).await;
    assert_eq!(read.status, StatusCode::NOT_FOUND);
    // null is no content, as before
    let mut body = order("ORD-1", 4000);
    body["content"] = Value::Null;
    assert_eq!(register(&app, &token, "k-3", &body).await.status, StatusCode::CREATED);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn negative_token_counts_in_a_step_event_are_refused_with_422() {
    let app = TestApp::spawn().await;
    let token = app.token("intake", &["sales"]).await;
    register(&app, &token, "k-1", &order("ORD-1", 4000)).await;
    let answer = event(
        &app,
        &token,
        "ORD-1",
        "ai_summary",
        json!({"seq": 1, "type": "started",
        "usage": {"input_tokens": -5, "output_tokens": 10}}),
    )
    .await;
    assert_eq!(answer.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", answer.body);
    assert_eq!(answer.json()["errors"][0]["field"], "usage");
    let step = app.api(Method::GET, "/api/v1/operations/ORD-1", &token, None, None).await.json()["steps"][1].clone();
    assert!(step["last_seq"].is_null(), "nothing was applied: {step}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_openapi_document_states_the_formats_and_limits_the_server_enforces() {
    let app = TestApp::spawn().await;
    let doc: Value = app.http.get(format!("{}/api/openapi.json", app.url)).send().await.unwrap().json().await.unwrap();
    let register = &doc["paths"]["/api/v1/operations"]["post"];
    let key = register["parameters"].as_array().unwrap().iter().find(|p| p["name"] == "Idempotency-Key").unwrap();
    assert_eq!(key["schema"]["maxLength"], 255);
    assert_eq!(key["schema"]["pattern"], "^[!-~]+$");
    assert!(register["requestBody"]["content"]["application/json"]["example"].is_object());
    assert!(register["responses"]["413"].is_object());
    let schemas = &doc["components"]["schemas"];
    assert_eq!(schemas["RegisterOperation"]["properties"]["process_id"]["maxLength"], 128);
    assert_eq!(schemas["StepEvent"]["properties"]["seq"]["minimum"], 0);
    assert_eq!(schemas["Usage"]["properties"]["input_tokens"]["minimum"], 0);
    let events = &doc["paths"]["/api/v1/operations/{process_id}/steps/{step}/events"]["post"];
    assert!(events["responses"]["413"].is_object());
    // What the answers carry: a replay says so in a header; compared values are numbers or strings, not objects.
    assert!(register["responses"]["201"]["headers"]["Idempotency-Replayed"].is_object(), "{}", register["responses"]);
    for side in ["expected", "found"] {
        let value = &schemas["ComparedField"]["properties"][side];
        assert!(!value.to_string().contains("\"object\""), "ComparedField.{side} takes any JSON value: {value}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_for_many_steps_at_once_are_each_applied_and_audited_once_and_the_chain_holds() {
    // Twelve senders, one per step, each sending its step's events in order, all at the same time: on SQLite
    // the writes waiting for the writer go in together, and a step changed meanwhile sends its group back.
    let app = TestApp::spawn().await;
    let token = app.token("intake", &["sales"]).await;
    for i in 0..7 {
        register(&app, &token, &format!("k-{i}"), &order(&format!("ORD-{i}"), 4000)).await;
    }
    let senders = (0..12).map(|n| {
        let (app, token) = (&app, &token);
        async move {
            let (process_id, step) = (format!("ORD-{}", n / 2), ["register_order", "ai_summary"][n % 2]);
            let mut applied = 0;
            for seq in 1..=6 {
                let body = json!({"seq": seq, "type": if seq % 2 == 1 { "started" } else { "unknown" }});
                let answer = event(app, token, &process_id, step, body).await;
                assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
                applied += (answer.json()["applied"] == true) as usize;
            }
            applied
        }
    });
    // And two senders racing on one step with the same seq: exactly one of them is applied.
    let racing = (0..2).map(|_| event(&app, &token, "ORD-6", "register_order", json!({"seq": 99, "type": "started"})));
    let (applied, raced) = futures::join!(futures::future::join_all(senders), futures::future::join_all(racing));
    assert_eq!(applied.iter().sum::<usize>(), 72, "every event of every step is newer than the last");
    assert_eq!(raced.iter().filter(|a| a.json()["applied"] == true).count(), 1);
    let audited = app.audit_actions().await.iter().filter(|a| a.starts_with("step.")).count();
    assert_eq!(audited, 73);
    let events = app.audit_actions().await.len() as i64;
    let verification = backend::services::audit::verify(app.db()).await.unwrap();
    assert_eq!(verification, backend::services::audit::Verification::Intact { events });
    for i in 0..6 {
        let steps =
            app.api(Method::GET, &format!("/api/v1/operations/ORD-{i}"), &token, None, None).await.json()["steps"]
                .clone();
        assert_eq!((steps[0]["last_seq"].clone(), steps[1]["last_seq"].clone()), (json!(6), json!(6)));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_step_changed_since_this_instance_wrote_it_is_read_again_and_never_overwritten() {
    // The instance remembers the step as it wrote it (seq 1, started). A rerun's evidence then sets the
    // completion flag behind its back; a later failure report must meet the flag, not the remembered row.
    let app = TestApp::spawn().await;
    let token = app.token("intake", &["sales"]).await;
    register(&app, &token, "k-1", &order("ORD-1", 4000)).await;
    let started = event(&app, &token, "ORD-1", "register_order", json!({"seq": 1, "type": "started"})).await;
    assert_eq!(started.json()["applied"], true);
    let step = backend::db::operations::step_in_operation(
        &mut app.db().connection().await.unwrap(),
        "ORD-1",
        "register_order",
    )
    .await
    .unwrap()
    .unwrap()
    .step;
    let mut tx = app.db().begin_write().await.unwrap();
    assert!(backend::db::rerun_requests::confirm_step_flag(&mut tx, step.id, app.clock.now()).await.unwrap());
    tx.commit().await.unwrap();

    let failed = event(
        &app,
        &token,
        "ORD-1",
        "register_order",
        json!({"seq": 2, "type": "failed",
        "error": {"class": "timeout", "message": "no answer"}}),
    )
    .await;
    assert_eq!(failed.json()["applied"], false, "{}", failed.body);
    assert_eq!(failed.json()["step"]["state"], "succeeded");
    let now = app.api(Method::GET, "/api/v1/operations/ORD-1", &token, None, None).await.json()["steps"][0].clone();
    assert_eq!((now["state"].clone(), now["completed_at"].is_string()), (json!("succeeded"), true));
    // And the remembered row is not trusted again: the next event is decided on the row as it is.
    let next = event(&app, &token, "ORD-1", "register_order", json!({"seq": 3, "type": "started"})).await;
    assert_eq!(next.json()["applied"], false, "a completed step is not started again");
}

/// A process ID another department holds is not confirmed to exist: registering it answers what a department
/// the client does not have gets (404), never "already registered".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn registering_a_process_id_another_department_holds_answers_as_for_an_unknown_department() {
    let app = TestApp::spawn().await;
    let billing = app.token("billing-intake", &["billing"]).await;
    let sales = app.token("sales-intake", &["sales"]).await;
    let invoice = |key: &str| {
        json!({"process_id": "INV-HELD", "workflow": "monthly-billing", "department": "billing",
        "steps": [{"name": "draft_invoice", "idempotency_key": format!("{key}-d")}, {"name": "send_mail", "idempotency_key": format!("{key}-m")},
                  {"name": "issue_invoice", "idempotency_key": format!("{key}-i")}]})
    };
    let held = app.api(Method::POST, "/api/v1/operations", &billing, Some("b-1"), Some(&invoice("B"))).await;
    assert_eq!(held.status, StatusCode::CREATED, "{}", held.body);
    let order = json!({"process_id": "INV-HELD", "workflow": "order-intake", "department": "sales",
        "steps": [{"name": "register_order", "idempotency_key": "S-r"}, {"name": "ai_summary", "idempotency_key": "S-s"}]});
    let taken = app.api(Method::POST, "/api/v1/operations", &sales, Some("s-1"), Some(&order)).await;
    let elsewhere = app.api(Method::POST, "/api/v1/operations", &sales, Some("s-2"), Some(&invoice("S"))).await;
    assert_eq!(taken.status, StatusCode::NOT_FOUND, "{}", taken.body);
    assert_eq!((taken.status, taken.json()["type"].clone()), (elsewhere.status, elsewhere.json()["type"].clone()));
    assert!(!taken.body.contains("already registered"), "{}", taken.body);
}

/// QUALITY 15: a client calling beyond its rate is answered 429 with `Retry-After`; another client's token is
/// unaffected.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_above_a_clients_rate_is_answered_429_and_another_client_is_unaffected() {
    let app = TestApp::spawn_with(|s| (s.api_rate_per_second, s.api_burst) = (1, 5)).await;
    let busy = app.token("busy-intake", &["sales"]).await;
    let calm = app.token("calm-intake", &["sales"]).await;
    let mut answers = Vec::new();
    for _ in 0..8 {
        answers.push(app.api(Method::GET, "/api/v1/operations/ORD-NONE", &busy, None, None).await);
    }
    let statuses: Vec<u16> = answers.iter().map(|a| a.status.as_u16()).collect();
    assert_eq!(statuses, [404, 404, 404, 404, 404, 429, 429, 429], "a burst of five, then the rate");
    let retry_after: u64 = answers[5].headers["retry-after"].to_str().unwrap().parse().unwrap();
    assert!((1..=2).contains(&retry_after), "{retry_after}");
    assert_eq!(answers[5].json()["type"], "/problems/too-many-requests");
    let other = app.api(Method::GET, "/api/v1/operations/ORD-NONE", &calm, None, None).await;
    assert_eq!(other.status, StatusCode::NOT_FOUND, "another client is not slowed down");
}

#[test]
fn the_document_lists_the_error_classes_the_api_accepts_by_their_wire_names() {
    let document = serde_json::to_value(server::api::document()).unwrap();
    let listed = document["components"]["schemas"]["ErrorClass"]["enum"].clone();
    let accepted: Vec<&str> = domain::stall::ErrorClass::ALL.iter().map(|c| c.as_str()).collect();
    assert_eq!(listed, json!(accepted));
}

#[test]
fn the_client_kits_keep_the_document_this_server_serves() {
    let served = serde_json::to_value(server::api::document()).unwrap();
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    for copy in ["clients/python/tests/openapi.json", "clients/typescript/test/openapi.json"] {
        let kept: Value = serde_json::from_str(&std::fs::read_to_string(root.join(copy)).unwrap()).unwrap();
        assert!(kept == served, "{copy} is not the document the server serves: `server openapi > {copy}`");
    }
}

#[test]
fn an_answer_with_a_field_the_document_does_not_name_breaks_the_document() {
    let problem = json!({"type": "/problems/not-found", "title": "Not Found", "status": 404, "detail": "not found"});
    let schema = crate::contract::component("ProblemBody");
    assert_eq!(crate::contract::violations(&schema, &problem), Vec::<String>::new());
    let mut extra = problem.clone();
    extra["hint"] = json!("undocumented");
    let found = crate::contract::violations(&schema, &extra);
    assert!(!found.is_empty() && found.iter().all(|e| e.contains("hint")), "{found:?}");
}
