//! Inbound webhooks (QUALITY 24): Standard Webhooks verification, stored then processed, deduplicated,
//! applied in version order, raw bodies purged.
use crate::harness::TestApp;
use backend::Clock;
use chrono::Duration;
use domain::webhooks::Secret;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::harness::{WEBHOOK_SECRET_NEW as NEW_SECRET, WEBHOOK_SECRET_OLD as OLD_SECRET};

/// The example configuration's `ai-summary` connector takes webhooks signed with either secret (a rotation).
async fn app_with_webhooks() -> (TestApp, String) {
    let app = TestApp::spawn().await;
    let token = app.token("intake", &["sales"]).await;
    let body = json!({"process_id": "ORD-W", "workflow": "order-intake", "department": "sales",
        "steps": [{"name": "register_order", "idempotency_key": "ORD-W-r"},
                  {"name": "ai_summary", "idempotency_key": "ORD-W-s", "content": {"order": "ORD-W"}}]});
    app.api(Method::POST, "/api/v1/operations", &token, Some("ORD-W"), Some(&body)).await;
    (app, token)
}

/// A demo AI service notification about the summary job, at a version.
fn payload(status: &str, version: i64) -> String {
    json!({"type": "execution.updated", "timestamp": "2026-11-30T00:00:00Z", "data": {
        "id": "resp_77", "idempotency_key": "ORD-W-s", "status": status, "content": {"order": "ORD-W"},
        "created_at": "2026-11-30T00:00:00Z", "version": version}})
    .to_string()
}

pub(crate) struct Sent {
    pub(crate) status: StatusCode,
    pub(crate) body: String,
}

pub(crate) async fn send(app: &TestApp, id: &str, body: &str, secret: &str, skew_seconds: i64) -> Sent {
    let timestamp = (app.clock.now() + Duration::seconds(skew_seconds)).timestamp();
    let signature = Secret::parse(secret).unwrap().sign(id, timestamp, body.as_bytes());
    send_raw(app, id, &timestamp.to_string(), &signature, body).await
}

async fn send_raw(app: &TestApp, id: &str, timestamp: &str, signature: &str, body: &str) -> Sent {
    let answer = app
        .http
        .post(format!("{}/hooks/ai-summary", app.url))
        .header("webhook-id", id)
        .header("webhook-timestamp", timestamp)
        .header("webhook-signature", signature)
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    Sent { status: answer.status(), body: answer.text().await.unwrap() }
}

async fn summary(app: &TestApp, token: &str) -> Value {
    let operation = app.api(Method::GET, "/api/v1/operations/ORD-W", token, None, None).await.json();
    operation["steps"][1].clone()
}

fn count(actions: &[String], action: &str) -> usize {
    actions.iter().filter(|a| *a == action).count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_signed_webhook_becomes_the_steps_verdict_and_a_replay_changes_nothing() {
    let (app, token) = app_with_webhooks().await;
    let first = send(&app, "msg_1", &payload("completed", 1), NEW_SECRET, 0).await;
    assert_eq!((first.status, first.body.contains("accepted")), (StatusCode::OK, true), "{}", first.body);
    let step = summary(&app, &token).await;
    assert_eq!(step["latest_verdict"], "executed");
    assert_eq!(step["reconciliation"]["asked_by"], "webhook:ai-summary");
    assert_eq!(step["reconciliation"]["evidence"]["external_id"], "resp_77");

    let replay = send(&app, "msg_1", &payload("completed", 1), NEW_SECRET, 10).await;
    assert_eq!((replay.status, replay.body.contains("duplicate")), (StatusCode::OK, true), "{}", replay.body);
    let actions = app.audit_actions().await;
    assert_eq!((count(&actions, "webhook.received"), count(&actions, "step.reconciled")), (1, 1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tampered_body_a_stale_or_future_timestamp_or_no_signature_is_refused_and_nothing_is_stored() {
    let (app, token) = app_with_webhooks().await;
    let body = payload("completed", 1);
    let timestamp = app.clock.now().timestamp();
    let signature = Secret::parse(NEW_SECRET).unwrap().sign("msg_2", timestamp, body.as_bytes());
    let tampered = body.replace("completed", "cancelled");
    assert_eq!(
        send_raw(&app, "msg_2", &timestamp.to_string(), &signature, &tampered).await.status,
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(send(&app, "msg_3", &body, NEW_SECRET, -301).await.status, StatusCode::UNAUTHORIZED);
    assert_eq!(send(&app, "msg_4", &body, NEW_SECRET, 301).await.status, StatusCode::UNAUTHORIZED);
    assert_eq!(send_raw(&app, "msg_5", &timestamp.to_string(), "", &body).await.status, StatusCode::UNAUTHORIZED);
    // Verified before parsing: a body that is not even JSON is refused for its signature, not its syntax.
    assert_eq!(
        send_raw(&app, "msg_7", &timestamp.to_string(), "v1,AAAA", "not json {").await.status,
        StatusCode::UNAUTHORIZED
    );
    let wrong = "whsec_c29tZW9uZS1lbHNlcy1zZWNyZXQtMTIzNA==";
    let refused = send(&app, "msg_6", &body, wrong, 0).await;
    assert_eq!(refused.status, StatusCode::UNAUTHORIZED);
    assert!(refused.body.contains("problems/") && !refused.body.contains("whsec"), "{}", refused.body);
    assert_eq!(summary(&app, &token).await["latest_verdict"], Value::Null);
    assert_eq!(count(&app.audit_actions().await, "webhook.received"), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn during_a_rotation_both_the_old_and_the_new_secret_verify() {
    let (app, _) = app_with_webhooks().await;
    assert_eq!(send(&app, "msg_old", &payload("in_progress", 1), OLD_SECRET, 0).await.status, StatusCode::OK);
    assert_eq!(send(&app, "msg_new", &payload("completed", 2), NEW_SECRET, 0).await.status, StatusCode::OK);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_older_version_arriving_late_never_overwrites_the_newer_state() {
    let (app, token) = app_with_webhooks().await;
    send(&app, "msg_v2", &payload("completed", 2), NEW_SECRET, 0).await;
    let late = send(&app, "msg_v1", &payload("in_progress", 1), NEW_SECRET, 0).await;
    assert_eq!(late.status, StatusCode::OK, "a stale webhook is still acknowledged");
    assert_eq!(summary(&app, &token).await["latest_verdict"], "executed");
    let actions = app.audit_actions().await;
    assert_eq!((count(&actions, "step.reconciled"), count(&actions, "webhook.stale_ignored")), (1, 1));
    send(&app, "msg_v3", &payload("in_progress", 3), NEW_SECRET, 0).await;
    assert_eq!(summary(&app, &token).await["latest_verdict"], "in_progress", "a newer version applies");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn webhooks_to_an_unknown_connector_or_one_without_a_secret_are_not_found() {
    let (app, _) = app_with_webhooks().await;
    for connector in ["nobody", "order-api"] {
        let answer = app.http.post(format!("{}/hooks/{connector}", app.url)).body("{}").send().await.unwrap();
        assert_eq!(answer.status(), StatusCode::NOT_FOUND, "{connector}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_webhook_about_no_known_step_is_kept_and_marked_not_applied() {
    let (app, _) = app_with_webhooks().await;
    let stranger = payload("completed", 1).replace("ORD-W-s", "SOMEONE-ELSE").replace("resp_77", "resp_x");
    assert_eq!(send(&app, "msg_u", &stranger, NEW_SECRET, 0).await.status, StatusCode::OK);
    assert_eq!(count(&app.audit_actions().await, "webhook.not_applied"), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn raw_bodies_are_purged_after_their_retention_and_the_deduplication_stays() {
    let (app, token) = app_with_webhooks().await;
    send(&app, "msg_p", &payload("completed", 1), NEW_SECRET, 0).await;
    let purge = backend::services::webhooks::purge_bodies;
    assert_eq!(purge(&app.state).await.unwrap(), 0, "nothing is old enough yet");
    app.clock.advance(Duration::days(31));
    assert_eq!(purge(&app.state).await.unwrap(), 1);
    assert_eq!(count(&app.audit_actions().await, "webhook.bodies_purged"), 1);
    let replay = send(&app, "msg_p", &payload("completed", 1), NEW_SECRET, 0).await;
    assert!(replay.body.contains("duplicate"), "{}", replay.body);
    assert_eq!(summary(&app, &token).await["latest_verdict"], "executed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_receipt_stored_but_not_processed_is_processed_by_the_next_pass() {
    let (app, token) = app_with_webhooks().await;
    let mut tx = app.db().begin_write().await.unwrap();
    let now = app.clock.now();
    backend::db::webhooks::insert_receipt(&mut tx, "ai-summary", "msg_crash", now, &payload("completed", 1), now)
        .await
        .unwrap();
    tx.commit().await.unwrap();
    assert_eq!(backend::services::webhooks::process_pending(&app.state).await.unwrap(), 1);
    assert_eq!(summary(&app, &token).await["latest_verdict"], "executed");
    assert_eq!(backend::services::webhooks::process_pending(&app.state).await.unwrap(), 0);
}
