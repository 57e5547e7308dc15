//! Incident reports: filed from a department's operations, followed up by prevention actions (overdue ones on
//! the report and on the board), read by auditors, hidden from other departments; and the known patterns a
//! later stalled operation shows.
use crate::fixtures::count;
use crate::harness::{Answer, PASSWORD, TestApp};
use backend::services::sweeper::sweep;
use chrono::Duration;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

/// An order stalled by the sweeper: its first step reported `error_class` (result_unknown → "result unknown").
async fn stalled_order(app: &TestApp, process_id: &str, department: &str, error_class: &str) {
    let token = app.token(&format!("intake-{process_id}"), &[department]).await;
    let workflow = if department == "sales" { "order-intake" } else { "monthly-billing" };
    let steps: Vec<Value> = app
        .state
        .config
        .workflows
        .iter()
        .find(|w| w.name == workflow)
        .unwrap()
        .steps
        .iter()
        .map(|s| json!({"name": s.name, "idempotency_key": format!("{process_id}-{}", s.name)}))
        .collect();
    let first = steps[0]["name"].as_str().unwrap().to_string();
    let body = json!({"process_id": process_id, "workflow": workflow, "department": department, "steps": steps});
    app.api(Method::POST, "/api/v1/operations", &token, Some(process_id), Some(&body)).await;
    let kind = if error_class == "result_unknown" { "unknown" } else { "failed" };
    let event = json!({"seq": 1, "type": kind, "error": {"class": error_class, "message": "no answer"}});
    let path = format!("/api/v1/operations/{process_id}/steps/{first}/events");
    app.api(Method::POST, &path, &token, None, Some(&event)).await;
    sweep(&app.state).await.unwrap();
}

/// The filing form's fields, with one field replaced.
fn report<'a>(process_ids: &'a str, changes: &[(&'a str, &'a str)]) -> Vec<(&'a str, &'a str)> {
    let mut form = vec![
        ("process_ids", process_ids),
        ("title", "注文の二重登録"),
        // The test clock starts at 2026-11-30 09:00 in Tokyo.
        ("occurred_at", "2026-11-30T08:30"),
        ("impact", "顧客 2 名に確認メールが二通届いた"),
        ("cause", "応答の喪失後に手作業で再実行した"),
        ("response", "注文 API の記録を確認し、二重の注文を取り消した"),
    ];
    for (field, value) in changes {
        form.iter_mut().find(|(f, _)| f == field).unwrap().1 = value;
    }
    form
}

async fn file(app: &TestApp, cookie: &str, form: &[(&str, &str)]) -> Answer {
    app.call("incidents/file", form, Some(cookie)).await
}

async fn filed(app: &TestApp, cookie: &str, process_ids: &str) -> String {
    let answer = file(app, cookie, &report(process_ids, &[])).await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
    answer.json().as_i64().expect("the new report's ID").to_string()
}

async fn load(app: &TestApp, cookie: &str, id: &str) -> Answer {
    app.call("incidents/load", &[("id", id)], Some(cookie)).await
}

fn refused_field(answer: &Answer) -> String {
    assert_eq!(answer.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", answer.body);
    answer.json()["Validation"][0]["field"].as_str().unwrap_or_default().to_string()
}

async fn incident_events(app: &TestApp, id: &str) -> Vec<domain::audit::AuditEvent> {
    let mut tx = app.db().begin_read().await.unwrap();
    backend::db::audit::for_object(&mut tx, "incident", id, 100).await.unwrap()
}

async fn add_action(app: &TestApp, cookie: &str, id: &str, owner: i64, due_on: &str) -> Answer {
    let owner = owner.to_string();
    let form = [
        ("id", id),
        ("description", "再実行の前に注文 API を照会する手順を追加"),
        ("owner_id", owner.as_str()),
        ("due_on", due_on),
    ];
    app.call("incidents/add_action", &form, Some(cookie)).await
}

async fn board(app: &TestApp, cookie: &str) -> Value {
    let answer = app.call_json("board/stalled", json!({"filter": {}}), Some(cookie)).await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
    answer.json()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn filing_an_incident_from_two_operations_records_everything_and_audits_it() {
    let app = TestApp::spawn().await;
    stalled_order(&app, "ORD-A", "sales", "result_unknown").await;
    stalled_order(&app, "ORD-B", "sales", "server_error").await;
    app.user("sato", &["staff"], &["sales"]).await;
    let sato = app.sign_in("sato", PASSWORD).await;

    let id = filed(&app, &sato, "ORD-A,\nORD-B").await;

    let incident = load(&app, &sato, &id).await.json();
    assert_eq!(incident["title"], "注文の二重登録");
    assert_eq!(incident["department"], "sales");
    assert_eq!(incident["occurred_at"], "2026-11-29T23:30:00Z", "08:30 in Tokyo");
    assert_eq!(incident["response"], "注文 API の記録を確認し、二重の注文を取り消した");
    assert_eq!(incident["created_by"], "sato san");
    assert_eq!(incident["may_edit"], true);
    let linked: Vec<(&str, &str)> = incident["operations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| (o["process_id"].as_str().unwrap(), o["event"].as_str().unwrap()))
        .collect();
    assert_eq!(linked, [("ORD-A", "result_unknown"), ("ORD-B", "temporary_failure")], "with their events when linked");

    let events = incident_events(&app, &id).await;
    assert_eq!(events.len(), 1);
    let created = &events[0];
    assert_eq!((created.action.as_str(), created.department.as_deref()), ("incident.created", Some("sales")));
    let after: Value = serde_json::from_str(created.after_json.as_deref().unwrap()).unwrap();
    assert_eq!(after["operations"], json!(["ORD-A", "ORD-B"]));
    assert_eq!(after["impact"], "顧客 2 名に確認メールが二通届いた");
    assert_eq!(created.actor_label, "sato");

    let list = app.call("incidents/list", &[], Some(&sato)).await.json();
    assert_eq!(list["incidents"][0]["title"], "注文の二重登録");
    assert_eq!(list["may_file"], true);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_is_refused_with_the_field_and_changes_nothing() {
    let app = TestApp::spawn().await;
    stalled_order(&app, "ORD-A", "sales", "result_unknown").await;
    stalled_order(&app, "INV-1", "billing", "result_unknown").await;
    let sato_id = app.user("sato", &["staff"], &["sales"]).await;
    let ito_id = app.user("ito", &["staff"], &["billing"]).await;
    let sato = app.sign_in("sato", PASSWORD).await;

    assert_eq!(refused_field(&file(&app, &sato, &report("ORD-A", &[("title", "  ")])).await), "title");
    assert_eq!(
        refused_field(&file(&app, &sato, &report("ORD-A", &[("occurred_at", "yesterday")])).await),
        "occurred_at"
    );
    assert_eq!(
        refused_field(&file(&app, &sato, &report("ORD-A", &[("occurred_at", "2026-12-24T10:00")])).await),
        "occurred_at"
    );
    assert_eq!(refused_field(&file(&app, &sato, &report(" ", &[])).await), "process_ids");
    // Another department's operation answers exactly like one that does not exist.
    let elsewhere = file(&app, &sato, &report("ORD-A, INV-1", &[])).await;
    let unknown = file(&app, &sato, &report("ORD-A, ORD-NOPE", &[])).await;
    assert_eq!(refused_field(&elsewhere), "process_ids");
    assert_eq!(refused_field(&unknown), "process_ids");
    assert!(elsewhere.body.contains("INV-1") && unknown.body.contains("ORD-NOPE"), "names what was not found");
    assert_eq!(count(&app, "SELECT COUNT(*) FROM incidents WHERE department <> $1", "").await, 0, "nothing filed");

    let id = filed(&app, &sato, "ORD-A").await;
    assert_eq!(
        refused_field(&add_action(&app, &sato, &id, ito_id, "2026-12-15").await),
        "owner",
        "an owner outside the department"
    );
    assert_eq!(refused_field(&add_action(&app, &sato, &id, sato_id, "2026-02-30").await), "due_on");
    assert_eq!(refused_field(&add_action(&app, &sato, &id, sato_id, "").await), "due_on");
    let no_description = [("id", id.as_str()), ("description", ""), ("owner_id", "1"), ("due_on", "2026-12-15")];
    assert_eq!(refused_field(&app.call("incidents/add_action", &no_description, Some(&sato)).await), "description");
    let linked_elsewhere =
        app.call("incidents/link", &[("id", id.as_str()), ("process_id", "INV-1")], Some(&sato)).await;
    assert_eq!(refused_field(&linked_elsewhere), "process_id");
    let status = [("id", id.as_str()), ("action_id", "1"), ("status", "closed")];
    assert_eq!(refused_field(&app.call("incidents/action_status", &status, Some(&sato)).await), "status");

    assert_eq!(count(&app, "SELECT COUNT(*) FROM prevention_actions WHERE description <> $1", "").await, 0);
    assert_eq!(count(&app, "SELECT COUNT(*) FROM incident_operations WHERE event <> $1", "").await, 1);
    let actions: Vec<String> = incident_events(&app, &id).await.into_iter().map(|e| e.action).collect();
    assert_eq!(actions, ["incident.created"], "only the one report that was filed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_action_past_its_due_date_is_overdue_on_the_report_and_the_board_until_it_is_done() {
    let app = TestApp::spawn().await;
    stalled_order(&app, "ORD-A", "sales", "result_unknown").await;
    let sato_id = app.user("sato", &["staff"], &["sales"]).await;
    app.user("ito", &["staff"], &["billing"]).await;
    let sato = app.sign_in("sato", PASSWORD).await;
    let id = filed(&app, &sato, "ORD-A").await;
    let added = add_action(&app, &sato, &id, sato_id, "2026-12-01").await;
    assert_eq!(added.status, StatusCode::OK, "{}", added.body);
    let action_id = added.json().as_i64().unwrap().to_string();

    let action = |incident: &Value| incident["actions"][0].clone();
    let before = load(&app, &sato, &id).await.json();
    assert_eq!((action(&before)["status"].clone(), action(&before)["overdue"].clone()), (json!("open"), json!(false)));
    assert_eq!(action(&before)["owner"], "sato san");
    assert_eq!(board(&app, &sato).await["overdue_actions"], json!([]), "due tomorrow is not late");

    // Two days on: 2 December in Tokyo, the due date (1 December) has passed.
    app.clock.advance(Duration::days(2));
    let sato = app.sign_in("sato", PASSWORD).await; // the old session has lapsed meanwhile
    let late = load(&app, &sato, &id).await.json();
    assert_eq!(action(&late)["overdue"], true);
    assert_eq!(late["today"], "2026-12-02");
    let list = app.call("incidents/list", &[], Some(&sato)).await.json();
    assert_eq!(
        (list["incidents"][0]["open_actions"].clone(), list["incidents"][0]["overdue_actions"].clone()),
        (json!(1), json!(1))
    );
    let on_board = board(&app, &sato).await["overdue_actions"].clone();
    assert_eq!(on_board.as_array().unwrap().len(), 1);
    assert_eq!(on_board[0]["incident_title"], "注文の二重登録");
    assert_eq!(on_board[0]["owner"], "sato san");
    assert_eq!(on_board[0]["due_on"], "2026-12-01");
    let ito = app.sign_in("ito", PASSWORD).await;
    assert_eq!(board(&app, &ito).await["overdue_actions"], json!([]), "another department's actions stay there");

    let done = app
        .call(
            "incidents/action_status",
            &[("id", id.as_str()), ("action_id", action_id.as_str()), ("status", "done")],
            Some(&sato),
        )
        .await;
    assert_eq!(done.status, StatusCode::OK, "{}", done.body);
    let after = load(&app, &sato, &id).await.json();
    assert_eq!((action(&after)["status"].clone(), action(&after)["overdue"].clone()), (json!("done"), json!(false)));
    assert!(action(&after)["done_at"].is_string());
    assert_eq!(board(&app, &sato).await["overdue_actions"], json!([]));
    let again = app
        .call(
            "incidents/action_status",
            &[("id", id.as_str()), ("action_id", action_id.as_str()), ("status", "done")],
            Some(&sato),
        )
        .await;
    assert_eq!(again.status, StatusCode::CONFLICT);

    let reopened = app
        .call(
            "incidents/action_status",
            &[("id", id.as_str()), ("action_id", action_id.as_str()), ("status", "open")],
            Some(&sato),
        )
        .await;
    assert_eq!(reopened.status, StatusCode::OK, "{}", reopened.body);
    assert_eq!(action(&load(&app, &sato, &id).await.json())["overdue"], true, "reopened and still late");

    let events = incident_events(&app, &id).await;
    let actions: Vec<&str> = events.iter().rev().map(|e| e.action.as_str()).collect();
    assert_eq!(
        actions,
        ["incident.created", "incident.action_added", "incident.action_updated", "incident.action_updated"]
    );
    let marked_done = &events[1];
    assert!(marked_done.before_json.as_deref().unwrap().contains(r#""status":"open""#));
    assert!(marked_done.after_json.as_deref().unwrap().contains(r#""status":"done""#));
}

/// Saves the report's texts with another title (the edit form sends every text).
async fn update_title(app: &TestApp, cookie: &str, id: &str, title: &str) -> StatusCode {
    let mut form: Vec<(&str, &str)> =
        report("", &[("title", title)]).into_iter().filter(|(f, _)| *f != "process_ids").collect();
    form.push(("id", id));
    app.call("incidents/update", &form, Some(cookie)).await.status
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auditors_read_every_incident_but_change_nothing_and_other_departments_get_404() {
    let app = TestApp::spawn().await;
    stalled_order(&app, "ORD-A", "sales", "result_unknown").await;
    stalled_order(&app, "ORD-C", "sales", "server_error").await;
    let sato_id = app.user("sato", &["staff"], &["sales"]).await;
    app.user("ito", &["staff"], &["billing"]).await;
    app.user("tanaka", &["auditor"], &[]).await;
    let sato = app.sign_in("sato", PASSWORD).await;
    let id = filed(&app, &sato, "ORD-A").await;
    let tanaka = app.sign_in("tanaka", PASSWORD).await;
    let read = load(&app, &tanaka, &id).await;
    assert_eq!(read.status, StatusCode::OK, "{}", read.body);
    assert_eq!((read.json()["may_edit"].clone(), read.json()["people"].clone()), (json!(false), json!([])));
    assert_eq!(app.call("incidents/list", &[], Some(&tanaka)).await.json()["incidents"].as_array().unwrap().len(), 1);
    assert_eq!(update_title(&app, &tanaka, &id, "監査担当の書き換え").await, StatusCode::FORBIDDEN);
    assert_eq!(add_action(&app, &tanaka, &id, sato_id, "2026-12-15").await.status, StatusCode::FORBIDDEN);
    assert_eq!(file(&app, &tanaka, &report("ORD-C", &[])).await.status, StatusCode::FORBIDDEN);

    let ito = app.sign_in("ito", PASSWORD).await;
    assert_eq!(load(&app, &ito, &id).await.status, StatusCode::NOT_FOUND);
    assert_eq!(update_title(&app, &ito, &id, "他部門の書き換え").await, StatusCode::NOT_FOUND);
    assert_eq!(add_action(&app, &ito, &id, sato_id, "2026-12-15").await.status, StatusCode::NOT_FOUND);
    let link = app.call("incidents/link", &[("id", id.as_str()), ("process_id", "ORD-C")], Some(&ito)).await;
    assert_eq!(link.status, StatusCode::NOT_FOUND);
    assert_eq!(app.call("incidents/list", &[], Some(&ito)).await.json()["incidents"], json!([]));
    assert_eq!(load(&app, &sato, "999").await.status, StatusCode::NOT_FOUND);

    // The department's own staff change it; each change is audited with what changed.
    assert_eq!(update_title(&app, &sato, &id, "注文の二重登録（確定）").await, StatusCode::OK);
    let linked = app.call("incidents/link", &[("id", id.as_str()), ("process_id", "ORD-C")], Some(&sato)).await;
    assert_eq!(linked.status, StatusCode::OK, "{}", linked.body);
    let twice = app.call("incidents/link", &[("id", id.as_str()), ("process_id", "ORD-C")], Some(&sato)).await;
    assert_eq!(twice.status, StatusCode::CONFLICT);
    let events = incident_events(&app, &id).await;
    let actions: Vec<&str> = events.iter().rev().map(|e| e.action.as_str()).collect();
    assert_eq!(actions, ["incident.created", "incident.updated", "incident.operation_linked"]);
    let updated = &events[1];
    assert_eq!(updated.before_json.as_deref(), Some(r#"{"title":"注文の二重登録"}"#), "only what changed");
    assert_eq!(updated.after_json.as_deref(), Some(r#"{"title":"注文の二重登録（確定）"}"#));
    assert!(events[0].after_json.as_deref().unwrap().contains(r#""process_id":"ORD-C""#));
    assert_eq!(load(&app, &tanaka, &id).await.json()["title"], "注文の二重登録（確定）");
}

/// Runs one statement with one text parameter (to change an operation behind the app's back).
async fn execute(app: &TestApp, sql: &str, id: &str) {
    let mut tx = app.db().begin_write().await.unwrap();
    match &mut tx {
        backend::db::Conn::Sqlite(t, _) => drop(sqlx::query(sql).bind(id).execute(&mut **t).await.unwrap()),
        backend::db::Conn::Postgres(t, _) => drop(sqlx::query(sql).bind(id).execute(&mut **t).await.unwrap()),
    }
    tx.commit().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_operation_like_a_past_incidents_shows_the_known_pattern_and_acknowledging_it_needs_evidence() {
    let app = TestApp::spawn().await;
    stalled_order(&app, "ORD-PAST", "sales", "result_unknown").await;
    app.user("sato", &["staff"], &["sales"]).await;
    app.user("ito", &["staff"], &["billing"]).await;
    app.user("tanaka", &["auditor"], &[]).await;
    let sato = app.sign_in("sato", PASSWORD).await;
    let id = filed(&app, &sato, "ORD-PAST").await;
    // What the operation says later does not move the match: the link keeps the event it had.
    execute(&app, "UPDATE operations SET event = 'no_response' WHERE process_id = $1", "ORD-PAST").await;
    stalled_order(&app, "ORD-NOW", "sales", "result_unknown").await;
    stalled_order(&app, "ORD-OTHER", "sales", "server_error").await;
    let patterns = |cookie: String, process_id: &'static str| {
        let app = &app;
        async move { app.call("incidents/patterns", &[("process_id", process_id)], Some(&cookie)).await }
    };

    let now = patterns(sato.clone(), "ORD-NOW").await.json();
    assert_eq!(now["may_act"], true);
    let seen = &now["patterns"][0];
    assert_eq!(seen["incident_id"].to_string(), id);
    assert_eq!(seen["title"], "注文の二重登録");
    assert_eq!(seen["response"], "注文 API の記録を確認し、二重の注文を取り消した");
    assert_eq!(seen["acknowledgement"], Value::Null);
    assert_eq!(patterns(sato.clone(), "ORD-OTHER").await.json()["patterns"], json!([]), "another event");
    assert_eq!(
        patterns(sato.clone(), "ORD-PAST").await.json()["patterns"],
        json!([]),
        "its own report is not a pattern"
    );
    assert_eq!(patterns(app.sign_in("ito", PASSWORD).await, "ORD-NOW").await.status, StatusCode::NOT_FOUND);

    let acknowledge = |cookie: String, evidence: &'static str| {
        let (app, id) = (&app, id.clone());
        async move {
            let form = [("process_id", "ORD-NOW"), ("incident_id", id.as_str()), ("evidence", evidence)];
            app.call("incidents/acknowledge", &form, Some(&cookie)).await
        }
    };
    assert_eq!(refused_field(&acknowledge(sato.clone(), "  ").await), "evidence");
    let tanaka = app.sign_in("tanaka", PASSWORD).await;
    assert_eq!(acknowledge(tanaka.clone(), "監査担当").await.status, StatusCode::FORBIDDEN);
    let wrong = [("process_id", "ORD-OTHER"), ("incident_id", id.as_str()), ("evidence", "別の事象")];
    assert_eq!(
        app.call("incidents/acknowledge", &wrong, Some(&sato)).await.status,
        StatusCode::NOT_FOUND,
        "not a pattern of that one"
    );
    let recorded = acknowledge(sato.clone(), "前回と同じ。注文 API で登録済みを確認した").await;
    assert_eq!(recorded.status, StatusCode::OK, "{}", recorded.body);
    assert_eq!(acknowledge(sato.clone(), "もう一度").await.status, StatusCode::CONFLICT);

    let understood = patterns(tanaka, "ORD-NOW").await.json();
    assert_eq!(understood["may_act"], false, "auditors read");
    let acknowledgement = &understood["patterns"][0]["acknowledgement"];
    assert_eq!(acknowledgement["evidence"], "前回と同じ。注文 API で登録済みを確認した");
    assert_eq!(acknowledgement["by"], "sato san");
    assert_eq!(acknowledgement["at"], "2026-11-30T00:00:00Z");
    let mut tx = app.db().begin_read().await.unwrap();
    let events = backend::db::audit::for_object(&mut tx, "operation", "ORD-NOW", 50).await.unwrap();
    let event = events.iter().find(|e| e.action == "operation.pattern_acknowledged").expect("audited");
    assert_eq!(event.department.as_deref(), Some("sales"));
    assert_eq!(event.reason.as_deref(), Some("前回と同じ。注文 API で登録済みを確認した"));
    assert!(event.after_json.as_deref().unwrap().contains(&format!(r#""incident_id":{id}"#)));
}

async fn page(app: &TestApp, path: &str, cookie: &str) -> String {
    let answer = app.http.get(format!("{}{path}", app.url)).header("cookie", cookie).send().await.unwrap();
    assert_eq!(answer.status(), StatusCode::OK, "{path}");
    answer.text().await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_pages_show_the_report_with_its_overdue_action_and_the_board_with_its_overdue_box() {
    let app = TestApp::spawn().await;
    stalled_order(&app, "ORD-PAST", "sales", "result_unknown").await;
    let sato_id = app.user("sato", &["staff"], &["sales"]).await;
    app.user("tanaka", &["auditor"], &[]).await;
    let sato = app.sign_in("sato", PASSWORD).await;
    let id = filed(&app, &sato, "ORD-PAST").await;
    assert_eq!(add_action(&app, &sato, &id, sato_id, "2026-12-01").await.status, StatusCode::OK);
    app.clock.advance(Duration::days(2));
    let sato = app.sign_in("sato", PASSWORD).await;

    let report = page(&app, &format!("/incidents/{id}"), &sato).await;
    assert!(report.contains("注文の二重登録") && report.contains("ORD-PAST"), "the report and its operation");
    assert!(
        report.contains(r#"data-testid="overdue""#) && report.contains("⚠ 期限切れ"),
        "overdue, in words and with an icon"
    );
    assert!(report.contains(r#"data-testid="add-action""#), "staff get the forms");
    assert!(report.contains(r#"value="2026-11-30T08:30""#), "the edit form holds the time in the reader's zone");
    assert!(
        report.contains(r#"name="impact" required rows="2">顧客 2 名に確認メールが二通届いた</textarea>"#),
        "and its texts"
    );
    let board = page(&app, "/", &sato).await;
    assert!(
        board.contains(r#"data-testid="overdue-actions""#) && board.contains(&format!(r#"href="/incidents/{id}""#))
    );
    let form = page(&app, "/incidents?from=ORD-PAST", &sato).await;
    assert!(
        form.contains(r#"name="process_ids" required rows="2">ORD-PAST</textarea>"#),
        "pre-filled from the operation"
    );

    let tanaka = app.sign_in("tanaka", PASSWORD).await;
    let read_only = page(&app, &format!("/incidents/{id}"), &tanaka).await;
    assert!(read_only.contains(r#"data-testid="read-only""#) && !read_only.contains(r#"data-testid="add-action""#));
}

/// One page of the list: the reports' IDs and the `next` cursor.
async fn list_page(app: &TestApp, cookie: &str, before: Option<i64>) -> (Vec<i64>, Option<i64>) {
    let before = before.map(|b| b.to_string());
    let form: Vec<(&str, &str)> = before.iter().map(|b| ("before", b.as_str())).collect();
    let answer = app.call("incidents/list", &form, Some(cookie)).await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
    let list = answer.json();
    let ids = list["incidents"].as_array().unwrap().iter().map(|i| i["id"].as_i64().unwrap()).collect();
    (ids, list["next"].as_i64())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_list_pages_through_every_report_once_newest_first() {
    let app = TestApp::spawn().await;
    stalled_order(&app, "ORD-P", "sales", "server_error").await;
    app.user("sato", &["staff"], &["sales"]).await;
    let sato = app.sign_in("sato", PASSWORD).await;
    // All at the same time: the order among them is by ID, and no page may skip or repeat one.
    let mut ids = Vec::new();
    for _ in 0..domain::incidents::PAGE_LENGTH + 3 {
        ids.push(filed(&app, &sato, "ORD-P").await.parse::<i64>().unwrap());
    }
    let (first, next) = list_page(&app, &sato, None).await;
    assert_eq!(first.len(), domain::incidents::PAGE_LENGTH);
    assert_eq!(next, first.last().copied(), "the next page starts after the last report shown");
    let link = format!(r#"href="/incidents?before={}""#, next.unwrap());
    assert!(page(&app, "/incidents", &sato).await.contains(&link), "the page links to the next one");
    let (second, after) = list_page(&app, &sato, next).await;
    assert_eq!(after, None, "the last page says so");
    let mut seen: Vec<i64> = first.into_iter().chain(second).collect();
    ids.reverse();
    assert_eq!(seen, ids, "every report once, newest first");
    seen.dedup();
    assert_eq!(seen.len(), ids.len());
}
