//! AI steps: every generation is kept with its background status, cancel requested versus confirmed, usage
//! and cost; the first completed one is adopted, people may adopt another, and cancelled ones still cost.
use crate::harness::{PASSWORD, TestApp};
use backend::Clock;
use domain::webhooks::Secret;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

const SECRET: &str = crate::harness::WEBHOOK_SECRET_OLD;

async fn event(app: &TestApp, token: &str, body: Value) {
    let answer =
        app.api(Method::POST, "/api/v1/operations/ORD-AI/steps/ai_summary/events", token, None, Some(&body)).await;
    assert_eq!(answer.json()["applied"], true, "{}", answer.body);
}

async fn attempts(app: &TestApp, token: &str) -> Vec<Value> {
    let operation = app.api(Method::GET, "/api/v1/operations/ORD-AI", token, None, None).await.json();
    operation["steps"][1]["ai_attempts"].as_array().cloned().unwrap_or_default()
}

fn attempt<'a>(all: &'a [Value], id: &str) -> &'a Value {
    all.iter().find(|a| a["result_id"] == id).unwrap_or_else(|| panic!("no attempt {id} in {all:?}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_requested_is_not_a_cancel_confirmed_and_a_cancelled_generation_still_costs() {
    let app = TestApp::spawn().await;
    let token = app.token("intake", &["sales"]).await;
    let body = json!({"process_id": "ORD-AI", "workflow": "order-intake", "department": "sales",
        "steps": [{"name": "register_order", "idempotency_key": "ORD-AI-r"}, {"name": "ai_summary", "idempotency_key": "ORD-AI-s"}]});
    app.api(Method::POST, "/api/v1/operations", &token, Some("ORD-AI"), Some(&body)).await;

    event(&app, &token, json!({"seq": 1, "type": "started", "result_id": "resp_A", "usage": {"input_tokens": 1000, "output_tokens": 50}})).await;
    event(
        &app,
        &token,
        json!({"seq": 2, "type": "unknown", "error": {"class": "cancel_requested", "message": "cancel sent"}}),
    )
    .await;
    let a = attempts(&app, &token).await;
    let first = attempt(&a, "resp_A");
    assert!(first["cancel_requested_at"].is_string(), "{first}");
    assert!(first["cancel_confirmed_at"].is_null(), "a request is not a confirmation: {first}");
    assert_eq!(first["cost_micro_yen"], 1000 * 375 + 50 * 1500);

    // The provider's notification confirms the cancel; the tokens it used stay counted.
    let payload = json!({"type": "execution.updated", "data": {"id": "resp_A", "idempotency_key": "ORD-AI-s",
        "status": "cancelled", "content": {}, "created_at": "2026-11-30T00:00:00Z", "version": 1}})
    .to_string();
    let timestamp = app.clock.now().timestamp();
    let signature = Secret::parse(SECRET).unwrap().sign("msg_cancel", timestamp, payload.as_bytes());
    let answer = app
        .http
        .post(format!("{}/hooks/ai-summary", app.url))
        .header("webhook-id", "msg_cancel")
        .header("webhook-timestamp", timestamp.to_string())
        .header("webhook-signature", signature)
        .body(payload)
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), StatusCode::OK);
    let a = attempts(&app, &token).await;
    let first = attempt(&a, "resp_A");
    assert_eq!(first["background_status"], "cancelled");
    assert!(first["cancel_confirmed_at"].is_string(), "{first}");
    assert!(first["cost_micro_yen"].as_i64().unwrap() > 0, "a cancel is not free: {first}");
    assert_eq!(first["adopted"], false);

    // A second generation completes: it is adopted, the cancelled one is not.
    event(&app, &token, json!({"seq": 3, "type": "started", "result_id": "resp_B"})).await;
    event(&app, &token, json!({"seq": 4, "type": "succeeded", "result_id": "resp_B", "usage": {"input_tokens": 900, "output_tokens": 180}})).await;
    let a = attempts(&app, &token).await;
    assert_eq!(
        (attempt(&a, "resp_B")["adopted"].clone(), attempt(&a, "resp_B")["background_status"].clone()),
        (json!(true), json!("completed"))
    );
    assert_eq!(a.iter().filter(|x| x["adopted"] == true).count(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn staff_adopt_another_completed_generation_and_a_cancelled_one_cannot_be_adopted() {
    let app = TestApp::spawn().await;
    let token = app.token("intake", &["sales"]).await;
    let body = json!({"process_id": "ORD-AI", "workflow": "order-intake", "department": "sales",
        "steps": [{"name": "register_order", "idempotency_key": "ORD-AI-r"}, {"name": "ai_summary", "idempotency_key": "ORD-AI-s"}]});
    app.api(Method::POST, "/api/v1/operations", &token, Some("ORD-AI"), Some(&body)).await;
    event(&app, &token, json!({"seq": 1, "type": "succeeded", "result_id": "resp_1"})).await;
    event(&app, &token, json!({"seq": 2, "type": "succeeded", "result_id": "resp_2"})).await;
    assert_eq!(attempt(&attempts(&app, &token).await, "resp_1")["adopted"], true, "the first completed one");

    app.user("sato", &["staff"], &["sales"]).await;
    let sato = app.sign_in("sato", PASSWORD).await;
    let adopt = |id: &'static str| [("process_id", "ORD-AI"), ("step", "ai_summary"), ("result_id", id)];
    let answer = app.call("board/adopt", &adopt("resp_2"), Some(&sato)).await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
    let a = attempts(&app, &token).await;
    assert_eq!(
        (attempt(&a, "resp_1")["adopted"].clone(), attempt(&a, "resp_2")["adopted"].clone()),
        (json!(false), json!(true))
    );
    assert_eq!(
        app.call("board/adopt", &adopt("resp_none"), Some(&sato)).await.status,
        StatusCode::UNPROCESSABLE_ENTITY
    );
    assert!(app.audit_actions().await.contains(&"ai_attempt.adopted".to_string()));
}
