//! Rerun requests on the seed's cases: the computed plan, confirmed flags, the five checks, the request for
//! approval, and what stops a request.
use crate::harness::{PASSWORD, TestApp};
use backend::demo::systems::Service;
use chrono::Duration;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

/// The demo's users and cases, with `sato` (sales staff) signed in.
async fn demo() -> (TestApp, String, String) {
    let app = TestApp::spawn().await;
    app.clock.advance(Duration::hours(2));
    backend::demo::load_if_empty(&app.state).await.unwrap().unwrap();
    let token = app.token("reader", &["sales", "billing"]).await;
    let sato = sign_in(&app, "sato").await;
    (app, token, sato)
}

/// Demo users have one-time passwords; the tests give them a known one.
async fn sign_in(app: &TestApp, username: &str) -> String {
    let turn = app.state.password_checks.turn().await.unwrap();
    let hash = backend::passwords::hash(turn, PASSWORD.to_string()).await.unwrap();
    let mut tx = app.db().begin_write().await.unwrap();
    let user = backend::db::users::by_username(&mut tx, username).await.unwrap().unwrap();
    backend::db::users::set_password_hash(&mut tx, user.id, &hash, backend::Clock::now(app.clock.as_ref()))
        .await
        .unwrap();
    tx.commit().await.unwrap();
    app.sign_in(username, PASSWORD).await
}

async fn start(app: &TestApp, cookie: &str, process_id: &str) -> (StatusCode, Value) {
    let answer =
        app.call("reruns/start", &[("process_id", process_id), ("reason", "要約だけ再実行する")], Some(cookie)).await;
    let body = serde_json::from_str(&answer.body).unwrap_or(Value::Null);
    (answer.status, body)
}

async fn confirm(app: &TestApp, cookie: &str, id: &str, number: &str, extra: &[(&str, &str)]) -> StatusCode {
    let mut form = vec![("id", id), ("number", number), ("comment", "ログで確認した")];
    form.extend_from_slice(extra);
    app.call("reruns/confirm", &form, Some(cookie)).await.status
}

async fn operation(app: &TestApp, token: &str, process_id: &str) -> Value {
    app.api(Method::GET, &format!("/api/v1/operations/{process_id}"), token, None, None).await.json()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_partial_success_case_plans_only_the_summary_and_goes_to_approval_after_five_confirmed_checks() {
    let (app, token, sato) = demo().await;
    let (status, answer) = start(&app, &sato, "ORD-1002").await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    let id = answer["Created"]["id"].as_str().expect("a draft request").to_string();

    let view = app.call("reruns/load", &[("id", &id)], Some(&sato)).await.json();
    assert_eq!(view["status"], "draft");
    assert_eq!(
        view["plan"]["steps"],
        json!([{"name": "ai_summary", "idempotency_key": "ORD-1002-ai_summary",
        "content_fingerprint": view["plan"]["steps"][0]["content_fingerprint"]}])
    );
    let checks = view["checks"].as_array().unwrap();
    assert_eq!(checks.len(), 5);
    assert!(checks.iter().all(|c| c["holds"] == true), "{checks:?}");
    // The page lists the order as left out of the plan, with what the outside system says and its flag (issue 62).
    let page = app.http.get(format!("{}/reruns/{id}", app.url)).header("cookie", &sato).send().await.unwrap();
    let page = page.text().await.unwrap();
    let left_out = page.split("data-testid=\"left-out\"").nth(1).expect("a list of the steps left out");
    assert!(left_out.contains("register_order") && left_out.contains("実行済み"), "{left_out}");
    assert!(checks[2]["evidence"].as_str().unwrap().contains("ORD-1002-ai_summary"));

    let early = app.call("reruns/submit", &[("id", &id)], Some(&sato)).await;
    assert_eq!(early.status, StatusCode::UNPROCESSABLE_ENTITY, "all five first");
    for n in ["1", "2", "3", "4"] {
        assert_eq!(confirm(&app, &sato, &id, n, &[]).await, StatusCode::OK);
    }
    assert_eq!(confirm(&app, &sato, &id, "5", &[]).await, StatusCode::UNPROCESSABLE_ENTITY, "the cause is needed");
    let cause = [("cause_class", "system_error"), ("cause_text", "要約ジョブの起動漏れ")];
    assert_eq!(confirm(&app, &sato, &id, "5", &cause).await, StatusCode::OK);
    let submitted = app.call("reruns/submit", &[("id", &id)], Some(&sato)).await;
    assert_eq!(submitted.status, StatusCode::OK, "{}", submitted.body);

    assert_eq!(operation(&app, &token, "ORD-1002").await["status"], "rerun_pending");
    let view = app.call("reruns/load", &[("id", &id)], Some(&sato)).await.json();
    assert_eq!(
        (view["status"].clone(), view["checks"][4]["cause_class"].clone()),
        (json!("pending_approval"), json!("system_error"))
    );
    let actions = app.audit_actions().await;
    assert_eq!(actions.iter().filter(|a| *a == "rerun_request.check_confirmed").count(), 5);
    assert!(actions.contains(&"rerun_request.created".into()) && actions.contains(&"rerun_request.submitted".into()));
    assert_eq!(start(&app, &sato, "ORD-1002").await.0, StatusCode::CONFLICT, "one open request per operation");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_executed_step_without_its_flag_gets_the_flag_instead_of_a_rerun() {
    let (app, token, sato) = demo().await;
    let (_, answer) = start(&app, &sato, "ORD-1001").await;
    let id = answer["Created"]["id"].as_str().expect("a draft request").to_string();
    let steps = operation(&app, &token, "ORD-1001").await["steps"].clone();
    assert!(steps[0]["completed_at"].is_string(), "the order's flag is confirmed: {}", steps[0]);
    let view = app.call("reruns/load", &[("id", &id)], Some(&sato)).await.json();
    assert_eq!(view["plan"]["steps"].as_array().unwrap().len(), 1);
    assert_eq!(view["plan"]["steps"][0]["name"], "ai_summary");
    assert!(app.audit_actions().await.contains(&"step.flag_confirmed".to_string()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_held_operation_cannot_be_requested_and_an_unknown_result_blocks_with_its_reason() {
    let (app, _, _) = demo().await;
    let ito = sign_in(&app, "ito").await;
    assert_eq!(start(&app, &ito, "INV-2001").await.0, StatusCode::CONFLICT, "on hold");
    app.call("board/release", &[("process_id", "INV-2001"), ("reason", "問い合わせの回答待ちを解除")], Some(&ito))
        .await;
    let (status, answer) = start(&app, &ito, "INV-2001").await;
    assert_eq!(status, StatusCode::OK);
    let reasons = answer["Blocked"]["reasons"].as_array().expect("blocked").clone();
    assert_eq!(reasons[0]["step"], "send_mail");
    assert_eq!(reasons[0]["why"], "result_unknown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_changed_verdict_after_planning_stops_the_request_for_approval() {
    let (app, _, sato) = demo().await;
    let (_, answer) = start(&app, &sato, "ORD-1002").await;
    let id = answer["Created"]["id"].as_str().unwrap().to_string();
    for n in ["1", "2", "3", "4"] {
        confirm(&app, &sato, &id, n, &[]).await;
    }
    confirm(&app, &sato, &id, "5", &[("cause_class", "system_error"), ("cause_text", "起動漏れ")]).await;
    // Meanwhile the summary did run after all, and a new look-up says so.
    app.demo_systems().execute(Service::Ai, "ORD-1002-ai_summary", &json!({}), None).await.unwrap();
    app.call("board/reconcile", &[("process_id", "ORD-1002")], Some(&sato)).await;
    let submitted = app.call("reruns/submit", &[("id", &id)], Some(&sato)).await;
    assert_eq!(submitted.status, StatusCode::CONFLICT);
    assert!(submitted.body.contains("plan-changed"), "{}", submitted.body);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn other_departments_do_not_see_requests_and_auditors_cannot_start_them() {
    let (app, _, sato) = demo().await;
    let (_, answer) = start(&app, &sato, "ORD-1002").await;
    let id = answer["Created"]["id"].as_str().unwrap().to_string();
    let ito = sign_in(&app, "ito").await;
    assert_eq!(app.call("reruns/load", &[("id", &id)], Some(&ito)).await.status, StatusCode::NOT_FOUND);
    assert_eq!(start(&app, &ito, "ORD-1001").await.0, StatusCode::NOT_FOUND);
    let tanaka = sign_in(&app, "tanaka").await;
    assert_eq!(app.call("reruns/load", &[("id", &id)], Some(&tanaka)).await.status, StatusCode::OK, "auditors read");
    assert_eq!(start(&app, &tanaka, "ORD-1001").await.0, StatusCode::FORBIDDEN);
    assert_eq!(confirm(&app, &tanaka, &id, "1", &[]).await, StatusCode::FORBIDDEN);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn staff_withdraw_a_request_waiting_for_approval_and_may_start_a_new_one() {
    let (app, token, sato) = demo().await;
    let (_, answer) = start(&app, &sato, "ORD-1002").await;
    let id = answer["Created"]["id"].as_str().unwrap().to_string();
    for n in ["1", "2", "3", "4"] {
        confirm(&app, &sato, &id, n, &[]).await;
    }
    confirm(&app, &sato, &id, "5", &[("cause_class", "system_error"), ("cause_text", "起動漏れ")]).await;
    app.call("reruns/submit", &[("id", &id)], Some(&sato)).await;
    assert_eq!(operation(&app, &token, "ORD-1002").await["status"], "rerun_pending");
    let bare = app.call("reruns/cancel", &[("id", &id), ("reason", "")], Some(&sato)).await;
    assert_eq!(bare.status, StatusCode::UNPROCESSABLE_ENTITY);
    let withdrawn = app.call("reruns/cancel", &[("id", &id), ("reason", "原因を調べ直す")], Some(&sato)).await;
    assert_eq!(withdrawn.status, StatusCode::OK, "{}", withdrawn.body);
    assert_eq!(operation(&app, &token, "ORD-1002").await["status"], "stalled");
    let again = app.call("reruns/cancel", &[("id", &id), ("reason", "もう一度")], Some(&sato)).await;
    assert_eq!(again.status, StatusCode::CONFLICT);
    assert_eq!(start(&app, &sato, "ORD-1002").await.0, StatusCode::OK, "a new request can be made");
}
