//! The board and detail pages' server functions: department scoping (QUALITY 10), filters, pages.
use crate::harness::{PASSWORD, TestApp};
use backend::services::sweeper::sweep;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

async fn stalled(app: &TestApp, token: &str, workflow: &str, process_id: &str, class: &str) {
    let (department, steps) = match workflow {
        "order-intake" => ("sales", vec!["register_order", "ai_summary"]),
        _ => ("billing", vec!["draft_invoice", "send_mail", "issue_invoice"]),
    };
    let steps: Vec<Value> =
        steps.iter().map(|s| json!({"name": s, "idempotency_key": format!("{process_id}-{s}")})).collect();
    let body = json!({"process_id": process_id, "workflow": workflow, "department": department, "steps": steps});
    let answer = app.api(Method::POST, "/api/v1/operations", token, Some(process_id), Some(&body)).await;
    assert_eq!(answer.status, StatusCode::CREATED, "{}", answer.body);
    let first = body["steps"][0]["name"].as_str().unwrap().to_string();
    let event = json!({"seq": 1, "type": "failed", "error": {"class": class, "message": "boom"}});
    let path = format!("/api/v1/operations/{process_id}/steps/{first}/events");
    app.api(Method::POST, &path, token, None, Some(&event)).await;
}

async fn fixture() -> TestApp {
    let app = TestApp::spawn().await;
    let sales = app.token("sales", &["sales"]).await;
    let billing = app.token("billing", &["billing"]).await;
    stalled(&app, &sales, "order-intake", "ORD-1", "server_error").await;
    stalled(&app, &sales, "order-intake", "ORD-2", "rate_limited").await;
    stalled(&app, &billing, "monthly-billing", "INV-1", "server_error").await;
    sweep(&app.state).await.unwrap();
    app.user("sato", &["staff"], &["sales"]).await;
    app.user("ito", &["staff"], &["billing"]).await;
    app.user("tanaka", &["auditor"], &[]).await;
    app
}

async fn board(app: &TestApp, cookie: &str, filter: Value) -> Value {
    let answer = app.call_json("board/stalled", json!({"filter": filter}), Some(cookie)).await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
    answer.json()
}

fn ids(page: &Value) -> Vec<String> {
    page["rows"].as_array().unwrap().iter().map(|r| r["process_id"].as_str().unwrap().to_string()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn staff_see_only_their_departments_stalled_operations_and_counts() {
    let app = fixture().await;
    let sato = app.sign_in("sato", PASSWORD).await;
    let page = board(&app, &sato, json!({})).await;
    assert_eq!(ids(&page), ["ORD-1", "ORD-2"]);
    let total: i64 = page["counts"].as_array().unwrap().iter().map(|c| c[1].as_i64().unwrap()).sum();
    assert_eq!(total, 2);
    // Asking for another department shows nothing rather than widening the view.
    assert!(ids(&board(&app, &sato, json!({"department": "billing"})).await).is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_auditor_sees_every_department() {
    let app = fixture().await;
    let tanaka = app.sign_in("tanaka", PASSWORD).await;
    assert_eq!(ids(&board(&app, &tanaka, json!({})).await), ["ORD-1", "ORD-2", "INV-1"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_departments_operation_answers_404_on_the_detail_page() {
    let app = fixture().await;
    let ito = app.sign_in("ito", PASSWORD).await;
    assert_eq!(app.call("board/operation", &[("process_id", "ORD-1")], Some(&ito)).await.status, StatusCode::NOT_FOUND);
    let own = app.call("board/operation", &[("process_id", "INV-1")], Some(&ito)).await;
    assert_eq!(own.status, StatusCode::OK);
    let detail = own.json();
    assert_eq!(detail["operation"]["steps"][0]["state"], "failed");
    let actions: Vec<&str> =
        detail["timeline"].as_array().unwrap().iter().map(|e| e["action"].as_str().unwrap()).collect();
    assert!(actions.contains(&"operation.registered") && actions.contains(&"operation.stalled"), "{actions:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn filters_by_event_and_workflow_narrow_the_board() {
    let app = fixture().await;
    let tanaka = app.sign_in("tanaka", PASSWORD).await;
    assert_eq!(ids(&board(&app, &tanaka, json!({"event": "rate_limited"})).await), ["ORD-2"]);
    assert_eq!(ids(&board(&app, &tanaka, json!({"workflow": "monthly-billing"})).await), ["INV-1"]);
    assert!(ids(&board(&app, &tanaka, json!({"min_age_minutes": 60})).await).is_empty());
    app.clock.advance(chrono::Duration::minutes(61));
    let tanaka = app.sign_in("tanaka", PASSWORD).await; // the idle session ended meanwhile
    assert_eq!(ids(&board(&app, &tanaka, json!({"min_age_minutes": 60})).await).len(), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_board_pages_by_keyset_without_repeating_or_skipping() {
    let app = TestApp::spawn().await;
    let sales = app.token("sales", &["sales"]).await;
    for i in 0..53 {
        stalled(&app, &sales, "order-intake", &format!("ORD-{i:03}"), "server_error").await;
    }
    sweep(&app.state).await.unwrap();
    app.user("sato", &["staff"], &["sales"]).await;
    let sato = app.sign_in("sato", PASSWORD).await;
    let first = board(&app, &sato, json!({})).await;
    assert_eq!(ids(&first).len(), 50);
    let second = board(&app, &sato, json!({"after": first["next"]})).await;
    assert_eq!(ids(&second).len(), 3);
    assert!(second["next"].is_null());
    let mut all = ids(&first);
    all.extend(ids(&second));
    all.dedup();
    assert_eq!(all.len(), 53);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_board_needs_a_signed_in_user() {
    let app = TestApp::spawn().await;
    assert_eq!(app.call_json("board/stalled", json!({"filter": {}}), None).await.status, StatusCode::UNAUTHORIZED);
}

/// The counts per event as the board reads them (kept by the triggers) and as the operations are.
async fn kept_and_counted(
    app: &TestApp,
    departments: Option<&[String]>,
) -> (Vec<(Option<String>, i64)>, Vec<(Option<String>, i64)>) {
    use backend::db::operations::{BoardQuery, stalled_counts};
    // A board "as it was" a year from now counts the operations themselves.
    let query = |created_before| BoardQuery {
        departments,
        workflow: None,
        event: None,
        created_before,
        after_id: 0,
        limit: 50,
    };
    let mut tx = app.db().begin_read().await.unwrap();
    let mut kept = stalled_counts(&mut tx, &query(None)).await.unwrap();
    let mut counted =
        stalled_counts(&mut tx, &query(Some(chrono::Utc::now() + chrono::Duration::days(365)))).await.unwrap();
    kept.sort();
    counted.sort();
    (kept, counted)
}

async fn assert_counts_follow_the_operations(app: &TestApp, when: &str) {
    let sales = ["sales".to_string()];
    for departments in [None, Some(&sales[..])] {
        let (kept, counted) = kept_and_counted(app, departments).await;
        assert_eq!(kept, counted, "{when}, departments {departments:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_boards_counts_follow_every_move_of_its_operations() {
    use crate::fixtures;
    use backend::services::holds;
    let app = fixture().await;
    assert_counts_follow_the_operations(&app, "after three stalls").await;
    let (kept, _) = kept_and_counted(&app, None).await;
    assert_eq!(kept.iter().map(|(_, n)| n).sum::<i64>(), 3);

    app.user("suzuki", &["manager"], &["sales"]).await;
    let (sato, suzuki) = (fixtures::caller(&app, "sato").await, fixtures::caller(&app, "suzuki").await);
    holds::place(&app.state, &suzuki, "ORD-1", "顧客に確認中").await.unwrap();
    assert_counts_follow_the_operations(&app, "on hold").await;
    holds::release(&app.state, &suzuki, "ORD-1", "確認済み").await.unwrap();
    let sales = app.token("sales-2", &["sales"]).await;
    fixtures::pending_request(&app, &sales, &sato, "ORD-3").await;
    assert_counts_follow_the_operations(&app, "a rerun requested for a new stall").await;

    app.db().fold_board_counts().await.unwrap();
    assert_counts_follow_the_operations(&app, "after the changes are folded in").await;
    assert_eq!(app.db().fold_board_counts().await.unwrap(), 0, "nothing is left to fold");
}

/// The board's rows are written as one string (ui/board.rs): what an integration sends is text there, never markup.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_boards_page_shows_markup_in_an_operation_as_text() {
    let app = TestApp::spawn().await;
    let sales = app.token("sales", &["sales"]).await;
    let key = r#"<img src=x onerror="alert(1)">&amp;"#;
    let steps = json!([{"name": "register_order", "idempotency_key": "ORD-X-register_order"},
        {"name": "ai_summary", "idempotency_key": "ORD-X-ai_summary"}]);
    let body = json!({"process_id": "ORD-X", "workflow": "order-intake", "department": "sales",
        "business_key": key, "steps": steps});
    let answer = app.api(Method::POST, "/api/v1/operations", &sales, Some("ORD-X"), Some(&body)).await;
    assert_eq!(answer.status, StatusCode::CREATED, "{}", answer.body);
    let event = json!({"seq": 1, "type": "failed", "error": {"class": "server_error", "message": "boom"}});
    app.api(Method::POST, "/api/v1/operations/ORD-X/steps/register_order/events", &sales, None, Some(&event)).await;
    sweep(&app.state).await.unwrap();
    app.user("sato", &["staff"], &["sales"]).await;
    let cookie = app.sign_in("sato", PASSWORD).await;

    let page = app.http.get(format!("{}/", app.url)).header("cookie", &cookie).send().await.unwrap();
    let page = page.text().await.unwrap();
    let tbody = &page[page.find("<tbody>").expect("the board's table")..page.find("</tbody>").unwrap()];
    assert!(tbody.contains(r#"<td data-label="業務キー">&lt;img src=x onerror="alert(1)"&gt;&amp;amp;"#), "{tbody}");
    assert!(!tbody.contains("<img"), "markup from an integration reached the page: {tbody}");
}
