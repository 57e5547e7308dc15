//! Reconciliation through the demo outside systems: verdicts after a stall, on demand, and the seed's cases.
use crate::harness::{PASSWORD, TestApp};
use backend::demo::systems::Service;
use backend::services::sweeper::sweep;
use backend::services::{Caller, key_alone, rerun_requests};
use chrono::Duration;
use contract::AppError;
use contract::reruns::StartAnswer;
use domain::approval::Decision;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

async fn order(app: &TestApp, token: &str, process_id: &str, amount: i64) {
    let content = json!({"item": "chair", "amount": amount});
    let body = json!({"process_id": process_id, "workflow": "order-intake", "department": "sales", "content": content,
        "steps": [{"name": "register_order", "idempotency_key": format!("{process_id}-r"), "content": content},
                  {"name": "ai_summary", "idempotency_key": format!("{process_id}-s")}]});
    let answer = app.api(Method::POST, "/api/v1/operations", token, Some(process_id), Some(&body)).await;
    assert_eq!(answer.status, StatusCode::CREATED, "{}", answer.body);
}

async fn event(app: &TestApp, token: &str, process_id: &str, step: &str, body: Value) {
    let path = format!("/api/v1/operations/{process_id}/steps/{step}/events");
    let answer = app.api(Method::POST, &path, token, None, Some(&body)).await;
    assert_eq!(answer.json()["applied"], true, "{}", answer.body);
}

async fn steps(app: &TestApp, token: &str, process_id: &str) -> Vec<Value> {
    let answer = app.api(Method::GET, &format!("/api/v1/operations/{process_id}"), token, None, None).await;
    answer.json()["steps"].as_array().unwrap().clone()
}

fn verdict_of(steps: &[Value], name: &str) -> String {
    let step = steps.iter().find(|s| s["name"] == name).unwrap();
    step["latest_verdict"].as_str().unwrap_or("none").to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_partial_success_is_reconciled_when_it_stalls_order_executed_summary_not_executed() {
    let app = TestApp::spawn().await;
    let token = app.token("intake", &["sales"]).await;
    order(&app, &token, "ORD-1", 4000).await;
    let content = json!({"item": "chair", "amount": 4000});
    let done = app.demo_systems().execute(Service::Orders, "ORD-1-r", &content, Some("ORD-1")).await.unwrap();
    event(
        &app,
        &token,
        "ORD-1",
        "register_order",
        json!({"seq": 1, "type": "succeeded", "result_id": done.execution.id}),
    )
    .await;
    app.clock.advance(Duration::minutes(20));
    assert_eq!(sweep(&app.state).await.unwrap(), 1);

    let steps = steps(&app, &token, "ORD-1").await;
    assert_eq!(verdict_of(&steps, "register_order"), "executed");
    assert_eq!(verdict_of(&steps, "ai_summary"), "not_executed");
    let evidence = &steps[0]["reconciliation"]["evidence"];
    assert_eq!(evidence["external_id"], json!(done.execution.id));
    assert_eq!(evidence["compared"][0], json!({"name": "amount", "expected": 4000, "found": 4000, "matches": true}));
    assert_eq!(steps[0]["reconciliation"]["asked_by"], "system:reconciler");
    assert_eq!(app.audit_actions().await.iter().filter(|a| *a == "step.reconciled").count(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_amount_at_the_outside_system_is_executed_mismatch_and_never_not_executed() {
    let app = TestApp::spawn().await;
    let token = app.token("intake", &["sales"]).await;
    order(&app, &token, "ORD-2", 5000).await;
    let what_was_done = json!({"item": "chair", "amount": 4000});
    app.demo_systems().execute(Service::Orders, "ORD-2-r", &what_was_done, None).await.unwrap();
    event(
        &app,
        &token,
        "ORD-2",
        "register_order",
        json!({"seq": 1, "type": "unknown", "error": {"class": "timeout", "message": "no answer"}}),
    )
    .await;
    sweep(&app.state).await.unwrap();

    let steps = steps(&app, &token, "ORD-2").await;
    assert_eq!(verdict_of(&steps, "register_order"), "executed_mismatch");
    let compared = &steps[0]["reconciliation"]["evidence"]["compared"][0];
    assert_eq!((compared["expected"].clone(), compared["found"].clone()), (json!(5000), json!(4000)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_step_registered_without_content_is_warned_of_and_its_verdict_says_nothing_was_compared() {
    let app = TestApp::spawn().await;
    let token = app.token("intake", &["sales"]).await;
    // The amount only in the operation's content, as the README's example once had it.
    let body = json!({"process_id": "ORD-4", "workflow": "order-intake", "department": "sales",
        "content": {"amount": 4000},
        "steps": [{"name": "register_order", "idempotency_key": "ORD-4-r"},
                  {"name": "ai_summary", "idempotency_key": "ORD-4-s", "content": {"order": "ORD-4"}}]});
    let answer = app.api(Method::POST, "/api/v1/operations", &token, Some("ORD-4"), Some(&body)).await;
    assert_eq!(answer.status, StatusCode::CREATED, "accepted all the same: {}", answer.body);
    let warnings = answer.json()["warnings"].clone();
    assert_eq!(warnings.as_array().map(Vec::len), Some(1), "{warnings}");
    assert_eq!(
        (&warnings[0]["kind"], &warnings[0]["step"]),
        (&json!("step_content_missing"), &json!("register_order"))
    );
    assert!(warnings[0]["message"].as_str().unwrap().contains("`content`"));

    // Another amount was placed: with nothing to compare, the verdict is "executed, content not compared" and
    // says why; it is no completion flag, and the request made on it is not submitted until a person confirms it.
    app.demo_systems().execute(Service::Orders, "ORD-4-r", &json!({"amount": 5000}), None).await.unwrap();
    let unknown = json!({"seq": 1, "type": "unknown", "error": {"class": "timeout", "message": "no answer"}});
    event(&app, &token, "ORD-4", "register_order", unknown).await;
    sweep(&app.state).await.unwrap();
    let steps = steps(&app, &token, "ORD-4").await;
    assert_eq!(verdict_of(&steps, "register_order"), "executed_not_compared");
    let evidence = &steps[0]["reconciliation"]["evidence"];
    assert_eq!(evidence["basis"]["not_compared"], "no_content", "{evidence}");
    assert_eq!(evidence["record_not_in_content"], json!(["amount"]), "{evidence}");
    assert!(evidence["summary"].as_str().unwrap().contains("step content not compared"), "{evidence}");
    app.user("sato", &["staff"], &["sales"]).await;
    let cookie = app.sign_in("sato", PASSWORD).await;
    let page = app.http.get(format!("{}/operations/ORD-4", app.url)).header("cookie", &cookie).send().await.unwrap();
    let page = page.text().await.unwrap();
    assert!(page.contains("内容は照合していません"), "the page says it, in the reader's language");
    let sato = crate::fixtures::caller(&app, "sato").await;
    let id = a_request_left_waiting_for_a_person(&app, &sato, "ORD-4").await;
    let after = self::steps(&app, &token, "ORD-4").await;
    assert!(after[0]["completed_at"].is_null(), "no flag on the key alone");
    let page = app.http.get(format!("{}/reruns/{id}", app.url)).header("cookie", &cookie).send().await.unwrap();
    let page = page.text().await.unwrap();
    assert!(page.contains(r#"data-testid="key-alone""#) && page.contains("5000"), "the record beside the content");

    // A comment on what was compared is required; the confirmation is the request's, saying it rests on the key
    // alone and what was compared — no flag before the request is approved and sent.
    let empty = key_alone::confirm(&app.state, &sato, &id, "register_order", " ").await;
    assert!(matches!(empty, Err(AppError::Validation(_))), "{empty:?}");
    key_alone::confirm(&app.state, &sato, &id, "register_order", "記録の 5000 円は注文どおり").await.unwrap();
    let after = self::steps(&app, &token, "ORD-4").await;
    assert!(after[0]["completed_at"].is_null(), "the judgment is the request's: no flag before it is sent");
    let events = backend::db::audit::page_after(&mut app.db().begin_read().await.unwrap(), 0, 10_000).await.unwrap();
    let judged = events.into_iter().rev().find(|e| e.action == "rerun_request.key_alone_confirmed").expect("its event");
    let after: Value = serde_json::from_str(judged.after_json.as_deref().unwrap()).unwrap();
    assert_eq!((after["rests_on"].clone(), after["record"]["amount"].clone()), (json!("key_alone"), json!(5000)));
    assert_eq!(judged.reason.as_deref(), Some("記録の 5000 円は注文どおり"));
    rerun_requests::submit(&app.state, &sato, &id).await.expect("submitted once confirmed: the plan still holds");
}

/// A request on `process_id` whose five checks are confirmed but whose step left out on the key alone is not:
/// it is made, and its submission is refused saying why.
async fn a_request_left_waiting_for_a_person(app: &TestApp, staff: &Caller, process_id: &str) -> String {
    let started = rerun_requests::start(&app.state, staff, process_id, "再実行する").await.unwrap();
    let StartAnswer::Created { id } = started else { panic!("a request can be made: {started:?}") };
    for n in 1..=5 {
        let cause =
            rerun_requests::Cause { class: Some("outside_service_outage".into()), text: Some("応答なし".into()) };
        rerun_requests::confirm(&app.state, staff, &id, n, "確認した", cause).await.unwrap();
    }
    let refused = rerun_requests::submit(&app.state, staff, &id).await.unwrap_err();
    let AppError::Validation(fields) = &refused else { panic!("{refused:?}") };
    assert_eq!(fields[0].rule, Some(domain::invalid::Rule::KeyAloneUnconfirmed), "{refused:?}");
    assert!(fields[0].message.contains("register_order"), "{refused:?}");
    id
}

/// The step says 4,000 yen as `total`; the order system names it `amount` and holds 5,000: nothing of it is
/// compared, and the verdict says so rather than "executed".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn content_whose_field_names_the_record_does_not_carry_is_executed_not_compared_naming_both_sides() {
    let app = TestApp::spawn().await;
    let token = app.token("intake", &["sales"]).await;
    let body = json!({"process_id": "ORD-5", "workflow": "order-intake", "department": "sales",
        "steps": [{"name": "register_order", "idempotency_key": "ORD-5-r", "content": {"total": 4000}},
                  {"name": "ai_summary", "idempotency_key": "ORD-5-s", "content": {"order": "ORD-5"}}]});
    let answer = app.api(Method::POST, "/api/v1/operations", &token, Some("ORD-5"), Some(&body)).await;
    assert_eq!(answer.status, StatusCode::CREATED, "{}", answer.body);
    app.demo_systems().execute(Service::Orders, "ORD-5-r", &json!({"amount": 5000}), None).await.unwrap();
    let unknown = json!({"seq": 1, "type": "unknown", "error": {"class": "timeout", "message": "no answer"}});
    event(&app, &token, "ORD-5", "register_order", unknown).await;
    sweep(&app.state).await.unwrap();
    let steps = steps(&app, &token, "ORD-5").await;
    assert_eq!(verdict_of(&steps, "register_order"), "executed_not_compared");
    let evidence = &steps[0]["reconciliation"]["evidence"];
    assert_eq!(evidence["basis"]["not_compared"], "no_common_field", "{evidence}");
    assert_eq!(
        (&evidence["content_not_in_record"], &evidence["record_not_in_content"]),
        (&json!(["total"]), &json!(["amount"]))
    );
    let summary = evidence["summary"].as_str().unwrap();
    assert!(summary.contains("share no field") && !summary.contains("without content"), "{summary}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ai_summary_still_generating_is_in_progress_and_executed_once_done_nothing_compared_without_content() {
    let app = TestApp::spawn().await;
    let token = app.token("intake", &["sales"]).await;
    app.user("sato", &["staff"], &["sales"]).await;
    let cookie = app.sign_in("sato", PASSWORD).await;
    order(&app, &token, "ORD-3", 4000).await;
    app.demo_systems().execute(Service::Ai, "ORD-3-s", &json!({"order": "ORD-3"}), None).await.unwrap();

    let answer = app.call("board/reconcile", &[("process_id", "ORD-3")], Some(&cookie)).await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
    assert_eq!(verdict_of(&steps(&app, &token, "ORD-3").await, "ai_summary"), "in_progress");

    app.clock.advance(Duration::seconds(30));
    app.call("board/reconcile", &[("process_id", "ORD-3")], Some(&cookie)).await;
    let steps = steps(&app, &token, "ORD-3").await;
    // Registered without content: done, and said to be compared with nothing.
    assert_eq!(verdict_of(&steps, "ai_summary"), "executed_not_compared");
    assert_eq!(steps[1]["reconciliation"]["asked_by"], "user:sato");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mail_log_that_finds_nothing_proves_nothing_so_the_verdict_is_unknown() {
    let app = TestApp::spawn().await;
    let token = app.token("billing-intake", &["billing"]).await;
    let body = json!({"process_id": "INV-1", "workflow": "monthly-billing", "department": "billing",
        "steps": [{"name": "draft_invoice", "idempotency_key": "INV-1-d"}, {"name": "send_mail", "idempotency_key": "INV-1-m"},
                  {"name": "issue_invoice", "idempotency_key": "INV-1-i"}]});
    app.api(Method::POST, "/api/v1/operations", &token, Some("INV-1"), Some(&body)).await;
    event(&app, &token, "INV-1", "draft_invoice", json!({"seq": 1, "type": "succeeded"})).await;
    event(
        &app,
        &token,
        "INV-1",
        "send_mail",
        json!({"seq": 1, "type": "unknown", "error": {"class": "result_unknown", "message": "?"}}),
    )
    .await;
    sweep(&app.state).await.unwrap();
    let steps = steps(&app, &token, "INV-1").await;
    assert_eq!(verdict_of(&steps, "send_mail"), "unknown");
    assert_eq!(verdict_of(&steps, "issue_invoice"), "not_executed", "the billing demo keeps every key");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_staff_or_managers_of_the_department_may_ask_and_others_get_404_or_403() {
    let app = TestApp::spawn().await;
    let token = app.token("intake", &["sales"]).await;
    order(&app, &token, "ORD-4", 4000).await;
    app.user("ito", &["staff"], &["billing"]).await;
    app.user("tanaka", &["auditor"], &[]).await;
    app.user("suzuki", &["manager"], &["sales"]).await;
    let other_department = app.sign_in("ito", PASSWORD).await;
    let auditor = app.sign_in("tanaka", PASSWORD).await;
    let manager = app.sign_in("suzuki", PASSWORD).await;
    let app = &app;
    let ask = |cookie: String| async move {
        app.call("board/reconcile", &[("process_id", "ORD-4")], Some(&cookie)).await.status
    };
    assert_eq!(ask(other_department).await, StatusCode::NOT_FOUND);
    assert_eq!(ask(auditor).await, StatusCode::FORBIDDEN);
    assert_eq!(ask(manager).await, StatusCode::OK);
    assert_eq!(app.call("board/reconcile", &[("process_id", "ORD-4")], None).await.status, StatusCode::UNAUTHORIZED);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_demo_order_api_gives_the_same_order_for_the_same_key_and_refuses_another_amount_with_409() {
    let app = TestApp::spawn_with_demo_systems().await;
    let post = |amount: i64| {
        app.http
            .post(format!("{}/demo/orders/requests", app.url))
            .header("idempotency-key", "K-1")
            .json(&json!({"item": "chair", "amount": amount}))
            .send()
    };
    let first = post(4000).await.unwrap();
    assert_eq!(first.status(), StatusCode::CREATED);
    let first: Value = first.json().await.unwrap();
    let again = post(4000).await.unwrap();
    assert_eq!((again.status(), again.headers()["idempotency-replayed"].to_str().unwrap()), (StatusCode::OK, "true"));
    assert_eq!(again.json::<Value>().await.unwrap()["id"], first["id"]);
    let changed = post(5000).await.unwrap();
    assert_eq!(changed.status(), StatusCode::CONFLICT);
    assert!(changed.text().await.unwrap().contains("idempotency-key-mismatch"));

    let log: Value = app
        .http
        .get(format!("{}/demo/orders/requests?idempotency_key=K-1", app.url))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        (log["content"]["amount"].clone(), log["replays"].clone(), log["conflicts"].clone()),
        (json!(4000), json!(1), json!(1))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_demo_can_do_the_work_and_lose_the_answer_and_its_log_still_shows_the_work() {
    let app = TestApp::spawn_with_demo_systems().await;
    let lost = app
        .http
        .post(format!("{}/demo/mail/requests", app.url))
        .header("idempotency-key", "M-1")
        .header("demo-fault", "drop-answer")
        .json(&json!({"to": "customer"}))
        .send()
        .await;
    let body = match lost {
        Ok(answer) => answer.text().await.map(|_| ()),
        Err(e) => Err(e),
    };
    assert!(body.is_err(), "the answer must be lost");
    let log = app.http.get(format!("{}/demo/mail/requests?idempotency_key=M-1", app.url)).send().await.unwrap();
    assert_eq!(log.status(), StatusCode::OK);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_demo_mode_the_demo_systems_are_not_served() {
    let app = TestApp::spawn().await;
    let answer = app
        .http
        .get(format!("{}/demo/orders/requests?idempotency_key=x", app.url))
        .header("accept", "application/json")
        .send()
        .await
        .unwrap();
    assert_ne!(answer.status(), StatusCode::OK);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_demo_loads_the_seeds_cases_stalled_and_reconciled() {
    let app = TestApp::spawn().await;
    app.clock.advance(Duration::hours(2));
    backend::demo::load_if_empty(&app.state).await.unwrap().expect("an empty database gets the demo");
    let token = app.token("reader", &["sales", "billing"]).await;

    let lost = steps(&app, &token, "ORD-1001").await;
    assert_eq!(verdict_of(&lost, "register_order"), "executed");
    assert!(lost[0]["reconciliation"]["evidence"]["summary"].as_str().unwrap().contains("1 record"));
    let order =
        app.demo_systems().find_by_key(Service::Orders, "ORD-1001-register_order", None).await.unwrap().unwrap();
    assert_eq!((order.content["amount"].clone(), order.replays, order.conflicts), (json!(4000), 1, 1));

    let partial = steps(&app, &token, "ORD-1002").await;
    assert_eq!(
        (verdict_of(&partial, "register_order"), verdict_of(&partial, "ai_summary")),
        ("executed".into(), "not_executed".into())
    );
    let operation = app.api(Method::GET, "/api/v1/operations/ORD-1002", &token, None, None).await.json();
    assert_eq!(operation["event"], "partial_success");

    let mail = steps(&app, &token, "INV-2001").await;
    assert_eq!(verdict_of(&mail, "send_mail"), "unknown");
    let invoice = app.api(Method::GET, "/api/v1/operations/INV-2001", &token, None, None).await.json();
    assert_eq!(invoice["status"], "on_hold", "nothing found proves nothing: the invoice waits on hold");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_demo_look_up_that_cannot_read_the_log_is_lookup_failed_not_not_executed() {
    let app = TestApp::spawn().await;
    let connector = app.state.connectors.get("order-api").unwrap();
    let lookup = backend::reconciliation::Lookup {
        process_id: "P".into(),
        step: "register_order".into(),
        idempotency_key: "K".into(),
        result_id: None,
    };
    assert!(matches!(
        connector.look_up(&lookup).await,
        domain::reconciliation::Finding::NotFound { authoritative: true }
    ));
    app.state.close().await;
    let finding = connector.look_up(&lookup).await;
    assert!(matches!(finding, domain::reconciliation::Finding::Failed(_)), "{finding:?}");
}

/// Finding 2 of the hardening round, as the attack went: a manager confirmed a step on the key alone on a draft and
/// withdrew it; staff made a new request, and the manager approved it — the step's flag, set by the manager's
/// judgment on the withdrawn draft, had dropped out of the new plan. Now a judgment stays on its request: the
/// withdrawn one leaves no flag, the new request shows the step again and waits for a confirmation of its own,
/// whoever gives it is a maker of it, and the flag is set when that request is sent, naming them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_alone_judgment_stays_on_its_request_and_makes_its_author_a_maker_of_it() {
    let app = TestApp::spawn_with_demo_loop().await;
    let token = app.token("demo-integration", &["sales"]).await;
    let body = json!({"process_id": "ORD-K", "workflow": "order-intake", "department": "sales",
        "steps": [{"name": "register_order", "idempotency_key": "ORD-K-r"},
                  {"name": "ai_summary", "idempotency_key": "ORD-K-s", "content": {"order": "ORD-K"}}]});
    app.api(Method::POST, "/api/v1/operations", &token, Some("ORD-K"), Some(&body)).await;
    app.demo_systems().execute(Service::Orders, "ORD-K-r", &json!({"amount": 5000}), None).await.unwrap();
    let unknown = json!({"seq": 1, "type": "unknown", "error": {"class": "timeout", "message": "no answer"}});
    event(&app, &token, "ORD-K", "register_order", unknown).await;
    sweep(&app.state).await.unwrap();
    for (name, role) in [("sato", "staff"), ("m1", "manager"), ("m2", "manager")] {
        app.user(name, &[role], &["sales"]).await;
    }
    let (sato, m1, m2) = (
        crate::fixtures::caller(&app, "sato").await,
        crate::fixtures::caller(&app, "m1").await,
        crate::fixtures::caller(&app, "m2").await,
    );

    // m1 confirms on a draft of his own, and withdraws it: no flag.
    let first = a_request_left_waiting_for_a_person(&app, &m1, "ORD-K").await;
    key_alone::confirm(&app.state, &m1, &first, "register_order", "記録を見た").await.unwrap();
    rerun_requests::cancel(&app.state, &m1, &first, "やめる").await.unwrap();
    assert!(flag_of(&app, &token).await.is_null(), "a withdrawn request's judgment sets no flag");

    // Staff's new request shows the step again and waits for a confirmation of its own.
    let second = a_request_left_waiting_for_a_person(&app, &sato, "ORD-K").await;
    // m2 gives it: m2 is now a maker of the request, and may not approve it.
    key_alone::confirm(&app.state, &m2, &second, "register_order", "記録の 5000 円は注文どおり").await.unwrap();
    rerun_requests::submit(&app.state, &sato, &second).await.unwrap();
    let own = backend::services::approvals::decide(&app.state, &m2, &second, Decision::Approve, "").await;
    assert!(matches!(own, Err(AppError::Forbidden)), "the judgment's author approved: {own:?}");
    assert!(flag_of(&app, &token).await.is_null(), "no flag while it waits");
    // m1, whose judgment went with the withdrawn draft, may.
    backend::services::approvals::decide(&app.state, &m1, &second, Decision::Approve, "").await.unwrap();
    backend::services::dispatcher::dispatch_due(&app.state).await.unwrap();
    assert!(!flag_of(&app, &token).await.is_null(), "the flag is set when the request is sent");
    let events = backend::db::audit::page_after(&mut app.db().begin_read().await.unwrap(), 0, 10_000).await.unwrap();
    let flagged = events.into_iter().rev().find(|e| e.action == "step.flag_confirmed").expect("the flag's event");
    let after: Value = serde_json::from_str(flagged.after_json.as_deref().unwrap()).unwrap();
    assert_eq!(
        (&after["rests_on"], &after["rerun_id"], &after["confirmed_by"]),
        (&json!("key_alone"), &json!(second), &json!("m2 san"))
    );
}

/// ORD-K's order step's completion flag, as the API shows it.
async fn flag_of(app: &TestApp, token: &str) -> Value {
    steps(app, token, "ORD-K").await[0]["completed_at"].clone()
}
