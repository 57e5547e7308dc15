//! Stall detection from reported data: one test per event the sweeper can tell from step events.
use crate::harness::TestApp;
use backend::services::sweeper::sweep;
use chrono::Duration;
use reqwest::Method;
use serde_json::{Value, json};

struct Intake<'a> {
    app: &'a TestApp,
    token: String,
}

impl<'a> Intake<'a> {
    async fn new(app: &'a TestApp) -> Intake<'a> {
        Intake { app, token: app.token("intake", &["sales"]).await }
    }

    async fn order(&self, process_id: &str) {
        let body = json!({"process_id": process_id, "workflow": "order-intake", "department": "sales",
            "steps": [{"name": "register_order", "idempotency_key": format!("{process_id}-r")},
                      {"name": "ai_summary", "idempotency_key": format!("{process_id}-s")}]});
        let answer = self.app.api(Method::POST, "/api/v1/operations", &self.token, Some(process_id), Some(&body)).await;
        assert_eq!(answer.status.as_u16(), 201, "{}", answer.body);
    }

    async fn event(&self, process_id: &str, step: &str, body: Value) {
        let path = format!("/api/v1/operations/{process_id}/steps/{step}/events");
        let answer = self.app.api(Method::POST, &path, &self.token, None, Some(&body)).await;
        assert_eq!(answer.json()["applied"], true, "{}", answer.body);
    }

    async fn get(&self, process_id: &str) -> Value {
        self.app.api(Method::GET, &format!("/api/v1/operations/{process_id}"), &self.token, None, None).await.json()
    }
}

fn failed(class: &str) -> Value {
    json!({"seq": 2, "type": "failed", "error": {"class": class, "message": format!("{class} from the provider")}})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_reported_error_class_stalls_the_operation_as_its_event_with_its_failure_class() {
    let app = TestApp::spawn().await;
    let intake = Intake::new(&app).await;
    let cases = [
        ("auth_expired", "auth_expired", "system_error"),
        ("rate_limited", "rate_limited", "outside_service_outage"),
        ("server_error", "temporary_failure", "outside_service_outage"),
        ("timeout", "no_response", "outside_service_outage"),
        ("duplicate_notification", "duplicate_notification", "data_inconsistency"),
        ("stale_notification", "stale_notification", "data_inconsistency"),
        ("cancel_requested", "cancel_requested", "outside_service_outage"),
    ];
    for (class, _, _) in cases {
        intake.order(class).await;
        intake.event(class, "register_order", json!({"seq": 1, "type": "started"})).await;
        intake.event(class, "register_order", failed(class)).await;
    }
    assert_eq!(sweep(&app.state).await.unwrap(), cases.len());
    for (class, event, failure_class) in cases {
        let operation = intake.get(class).await;
        assert_eq!(operation["status"], "stalled", "{class}");
        assert_eq!(
            (operation["event"].as_str(), operation["failure_class"].as_str()),
            (Some(event), Some(failure_class)),
            "{class}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_step_started_and_silent_past_its_deadline_is_no_response() {
    let app = TestApp::spawn().await;
    let intake = Intake::new(&app).await;
    intake.order("ORD-1").await;
    intake.event("ORD-1", "register_order", json!({"seq": 1, "type": "started"})).await;
    app.clock.advance(Duration::seconds(119));
    assert_eq!(sweep(&app.state).await.unwrap(), 0);
    assert_eq!(intake.get("ORD-1").await["status"], "running");
    app.clock.advance(Duration::seconds(2));
    assert_eq!(sweep(&app.state).await.unwrap(), 1);
    assert_eq!(intake.get("ORD-1").await["event"], "no_response");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ai_summary_still_beating_past_its_deadline_is_ai_in_progress() {
    let app = TestApp::spawn().await;
    let intake = Intake::new(&app).await;
    intake.order("ORD-1").await;
    intake.event("ORD-1", "register_order", json!({"seq": 1, "type": "succeeded", "result_id": "o-1"})).await;
    intake.event("ORD-1", "ai_summary", json!({"seq": 1, "type": "started"})).await;
    for seq in 2..10 {
        app.clock.advance(Duration::seconds(110));
        intake.event("ORD-1", "ai_summary", json!({"seq": seq, "type": "heartbeat"})).await;
    }
    assert_eq!(sweep(&app.state).await.unwrap(), 0, "880 s: within the 900 s deadline");
    app.clock.advance(Duration::seconds(60));
    assert_eq!(sweep(&app.state).await.unwrap(), 1);
    assert_eq!(intake.get("ORD-1").await["event"], "ai_in_progress");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_seed_case_order_registered_and_summary_never_started_is_partial_success() {
    let app = TestApp::spawn().await;
    let intake = Intake::new(&app).await;
    intake.order("ORD-4000").await;
    intake.event("ORD-4000", "register_order", json!({"seq": 1, "type": "succeeded", "result_id": "order-4000"})).await;
    app.clock.advance(Duration::seconds(901));
    assert_eq!(sweep(&app.state).await.unwrap(), 1);
    let operation = intake.get("ORD-4000").await;
    assert_eq!(
        (operation["event"].as_str(), operation["failure_class"].as_str()),
        (Some("partial_success"), Some("system_error"))
    );
    assert!(operation["steps"][0]["completed_at"].is_string(), "the registered order keeps its flag");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_outcome_without_a_result_id_is_result_unknown() {
    let app = TestApp::spawn().await;
    let intake = Intake::new(&app).await;
    intake.order("ORD-1").await;
    intake.event("ORD-1", "register_order", json!({"seq": 1, "type": "unknown"})).await;
    sweep(&app.state).await.unwrap();
    assert_eq!(intake.get("ORD-1").await["event"], "result_unknown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_sweepers_at_once_record_each_stall_once() {
    let app = TestApp::spawn().await;
    let intake = Intake::new(&app).await;
    for i in 0..10 {
        let id = format!("ORD-{i}");
        intake.order(&id).await;
        intake.event(&id, "register_order", failed("server_error")).await;
    }
    let (a, b) = tokio::join!(sweep(&app.state), sweep(&app.state));
    assert_eq!(a.unwrap() + b.unwrap(), 10);
    let stalled = app.audit_actions().await.iter().filter(|a| *a == "operation.stalled").count();
    assert_eq!(stalled, 10);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_healthy_operation_and_a_completed_one_are_left_alone() {
    let app = TestApp::spawn().await;
    let intake = Intake::new(&app).await;
    intake.order("ORD-1").await;
    intake.order("ORD-2").await;
    intake.event("ORD-2", "register_order", json!({"seq": 1, "type": "succeeded", "result_id": "o"})).await;
    intake.event("ORD-2", "ai_summary", json!({"seq": 1, "type": "succeeded", "result_id": "s"})).await;
    app.clock.advance(Duration::seconds(100));
    assert_eq!(sweep(&app.state).await.unwrap(), 0);
    assert_eq!(intake.get("ORD-1").await["status"], "running");
    assert_eq!(intake.get("ORD-2").await["status"], "completed");
}
