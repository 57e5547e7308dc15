//! Holds and manual verdicts: people stop work while they ask the provider, and record what they found out.
use crate::harness::{PASSWORD, TestApp};
use backend::services::sweeper::sweep;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

/// An order whose first step failed with an unknown outcome, stalled by the sweeper.
async fn stalled_order(app: &TestApp, process_id: &str) -> String {
    let token = app.token(&format!("intake-{process_id}"), &["sales"]).await;
    let body = json!({"process_id": process_id, "workflow": "order-intake", "department": "sales",
        "steps": [{"name": "register_order", "idempotency_key": format!("{process_id}-r")},
                  {"name": "ai_summary", "idempotency_key": format!("{process_id}-s")}]});
    app.api(Method::POST, "/api/v1/operations", &token, Some(process_id), Some(&body)).await;
    let event = json!({"seq": 1, "type": "unknown", "error": {"class": "result_unknown", "message": "no ID"}});
    let path = format!("/api/v1/operations/{process_id}/steps/register_order/events");
    app.api(Method::POST, &path, &token, None, Some(&event)).await;
    sweep(&app.state).await.unwrap();
    token
}

async fn status(app: &TestApp, token: &str, process_id: &str) -> Value {
    app.api(Method::GET, &format!("/api/v1/operations/{process_id}"), token, None, None).await.json()["status"].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn staff_hold_a_stalled_operation_with_a_reason_and_release_it_with_another() {
    let app = TestApp::spawn().await;
    let token = stalled_order(&app, "ORD-H").await;
    app.user("sato", &["staff"], &["sales"]).await;
    let sato = app.sign_in("sato", PASSWORD).await;

    let no_reason = app.call("board/hold", &[("process_id", "ORD-H"), ("reason", "  ")], Some(&sato)).await;
    assert_eq!(no_reason.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", no_reason.body);
    let held =
        app.call("board/hold", &[("process_id", "ORD-H"), ("reason", "配信事業者に問い合わせ中")], Some(&sato)).await;
    assert_eq!(held.status, StatusCode::OK, "{}", held.body);
    assert_eq!(status(&app, &token, "ORD-H").await, "on_hold");
    let again = app.call("board/hold", &[("process_id", "ORD-H"), ("reason", "twice")], Some(&sato)).await;
    assert_eq!(again.status, StatusCode::CONFLICT);

    let board = app.call_json("board/stalled", json!({"filter": {}}), Some(&sato)).await.json();
    assert_eq!(board["rows"][0]["status"], "on_hold", "held operations stay on the board");

    let released =
        app.call("board/release", &[("process_id", "ORD-H"), ("reason", "未送信と回答あり")], Some(&sato)).await;
    assert_eq!(released.status, StatusCode::OK, "{}", released.body);
    assert_eq!(status(&app, &token, "ORD-H").await, "stalled");
    let not_held = app.call("board/release", &[("process_id", "ORD-H"), ("reason", "again")], Some(&sato)).await;
    assert_eq!(not_held.status, StatusCode::CONFLICT);

    let mut tx = app.db().begin_read().await.unwrap();
    let events = backend::db::audit::for_object(&mut tx, "operation", "ORD-H", 50).await.unwrap();
    let reasons: Vec<(String, Option<String>)> = events.into_iter().map(|e| (e.action, e.reason)).collect();
    assert!(reasons.contains(&("operation.held".into(), Some("配信事業者に問い合わせ中".into()))), "{reasons:?}");
    assert!(reasons.contains(&("operation.released".into(), Some("未送信と回答あり".into()))), "{reasons:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_running_operation_cannot_be_held_and_auditors_or_other_departments_cannot_hold() {
    let app = TestApp::spawn().await;
    stalled_order(&app, "ORD-S").await;
    let token = app.token("intake", &["sales"]).await;
    let body = json!({"process_id": "ORD-R", "workflow": "order-intake", "department": "sales",
        "steps": [{"name": "register_order", "idempotency_key": "r"}, {"name": "ai_summary", "idempotency_key": "s"}]});
    app.api(Method::POST, "/api/v1/operations", &token, Some("ORD-R"), Some(&body)).await;
    app.user("sato", &["staff"], &["sales"]).await;
    app.user("ito", &["staff"], &["billing"]).await;
    app.user("tanaka", &["auditor"], &[]).await;
    let hold = |cookie: String, process_id: &'static str| {
        let app = &app;
        async move { app.call("board/hold", &[("process_id", process_id), ("reason", "x")], Some(&cookie)).await.status }
    };
    assert_eq!(hold(app.sign_in("sato", PASSWORD).await, "ORD-R").await, StatusCode::CONFLICT);
    assert_eq!(hold(app.sign_in("ito", PASSWORD).await, "ORD-S").await, StatusCode::NOT_FOUND);
    assert_eq!(hold(app.sign_in("tanaka", PASSWORD).await, "ORD-S").await, StatusCode::FORBIDDEN);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_manager_records_a_verdict_found_out_by_hand_and_staff_cannot() {
    let app = TestApp::spawn().await;
    let token = stalled_order(&app, "ORD-M").await;
    app.user("suzuki", &["manager"], &["sales"]).await;
    app.user("sato", &["staff"], &["sales"]).await;
    let manager = app.sign_in("suzuki", PASSWORD).await;
    let form = |verdict: &'static str, evidence: &'static str| {
        [("process_id", "ORD-M"), ("step", "register_order"), ("verdict", verdict), ("evidence", evidence)]
    };
    let staff = app.sign_in("sato", PASSWORD).await;
    assert_eq!(
        app.call("board/manual_verdict", &form("not_executed", "x"), Some(&staff)).await.status,
        StatusCode::FORBIDDEN
    );
    assert_eq!(
        app.call("board/manual_verdict", &form("in_progress", "x"), Some(&manager)).await.status,
        StatusCode::UNPROCESSABLE_ENTITY
    );
    assert_eq!(
        app.call("board/manual_verdict", &form("not_executed", ""), Some(&manager)).await.status,
        StatusCode::UNPROCESSABLE_ENTITY
    );

    let recorded = app
        .call(
            "board/manual_verdict",
            &form("not_executed", "サポート窓口が未登録を確認 (問合せ #4471)"),
            Some(&manager),
        )
        .await;
    assert_eq!(recorded.status, StatusCode::OK, "{}", recorded.body);
    let operation = app.api(Method::GET, "/api/v1/operations/ORD-M", &token, None, None).await.json();
    let step = &operation["steps"][0];
    assert_eq!(step["latest_verdict"], "not_executed");
    assert_eq!(step["reconciliation"]["asked_by"], "manual:suzuki");
    assert_eq!(step["reconciliation"]["evidence"]["summary"], "サポート窓口が未登録を確認 (問合せ #4471)");
    assert!(app.audit_actions().await.contains(&"step.manual_verdict".to_string()));
}
