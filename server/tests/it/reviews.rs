//! Reviews and risk indicators (issue 8): the arithmetic on fixed fixtures, thresholds that notify once, the
//! owner's sign-off, the charts and the CSV export.
use crate::fixtures::{caller, pending_request};
use crate::harness::{PASSWORD, TestApp, example_config};
use backend::db;
use backend::services::{approvals, reviews};
use chrono::{Duration, TimeZone, Utc};
use domain::audit::{Actor, AuditEntry};
use domain::audit_action::AuditAction;
use domain::indicators::{Indicator, PeriodKind, Threshold};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

/// Monday 2026-11-30, 09:00 in Tokyo: the first day of the week under review.
fn monday() -> chrono::DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 30, 0, 0, 0).unwrap()
}

async fn register(app: &TestApp, token: &str, process_id: &str) {
    let body = json!({"process_id": process_id, "workflow": "order-intake", "department": "sales",
        "steps": [{"name": "register_order", "idempotency_key": format!("{process_id}-r")},
                  {"name": "ai_summary", "idempotency_key": format!("{process_id}-s")}]});
    let answer = app.api(Method::POST, "/api/v1/operations", token, Some(process_id), Some(&body)).await;
    assert_eq!(answer.status, StatusCode::CREATED, "{}", answer.body);
}

async fn step_event(app: &TestApp, token: &str, process_id: &str, step: &str, event: Value) {
    let path = format!("/api/v1/operations/{process_id}/steps/{step}/events");
    let answer = app.api(Method::POST, &path, token, None, Some(&event)).await;
    assert_eq!(answer.json()["applied"], true, "{}", answer.body);
}

/// A look-up result as the connectors record it (`records`: how many records the provider held for the key).
async fn look_up(app: &TestApp, process_id: &str, connector: &str, verdict: &str, records: i64) {
    let mut tx = app.db().begin_write().await.unwrap();
    let operation = db::operations::by_process_id(&mut tx, process_id).await.unwrap().unwrap();
    let steps = db::operations::steps(&mut tx, operation.id).await.unwrap();
    let new = db::reconciliations::NewReconciliation {
        step_id: steps[0].id,
        connector,
        verdict,
        external_id: None,
        evidence_json: "{}",
        asked_by: "test",
        recorded_by: None,
        records,
    };
    db::reconciliations::insert(&mut tx, &new, app.state.clock.now()).await.unwrap();
    tx.commit().await.unwrap();
}

/// An audit event as the dispatcher or the sweeper writes it.
async fn audited(app: &TestApp, action: AuditAction, department: &str, after: Value) {
    let mut tx = app.db().begin_write().await.unwrap();
    let entry = AuditEntry::new(
        Actor::system(domain::audit::SystemActor::CommandLine),
        action,
        domain::audit::ObjectType::Operation,
        "fixture",
    )
    .department(Some(department))
    .after(after);
    backend::services::audit::record(&mut tx, entry, None, app.state.clock.now()).await.unwrap();
    tx.commit().await.unwrap();
}

fn row<'a>(review: &'a Value, indicator: &str) -> &'a Value {
    review["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["indicator"] == indicator)
        .unwrap_or_else(|| panic!("{indicator}: {review}"))
}

fn value(review: &Value, indicator: &str) -> Option<f64> {
    row(review, indicator)["value"].as_f64()
}

async fn review(app: &TestApp, cookie: &str, query: Value) -> Value {
    let answer = app.call_json("reviews/show", json!({"query": query}), Some(cookie)).await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
    answer.json()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_weeks_indicators_are_computed_from_what_happened_in_it_per_department_and_overall() {
    let app = TestApp::spawn().await;
    let sales = app.token("intake", &["sales"]).await;
    let billing = app.token("billing-intake", &["billing"]).await;
    app.user("sato", &["staff"], &["sales"]).await;
    app.user("tanaka", &["manager"], &["sales"]).await;
    app.user("kansa", &["auditor"], &[]).await;

    // The week before: two requests decided 30 and 90 minutes after they were submitted.
    app.clock.set(monday() - Duration::days(6));
    let staff = caller(&app, "sato").await;
    let first = pending_request(&app, &sales, &staff, "ORD-L1").await;
    app.clock.advance(Duration::minutes(30));
    let owner = caller(&app, "tanaka").await; // signed in to decide
    approvals::decide(&app.state, &owner, &first, domain::approval::Decision::Approve, "").await.unwrap();
    let second = pending_request(&app, &sales, &staff, "ORD-L2").await;
    app.clock.advance(Duration::minutes(90));
    let owner = caller(&app, "tanaka").await;
    approvals::decide(&app.state, &owner, &second, domain::approval::Decision::Reject, "根拠不足").await.unwrap();

    // This week, in sales: two registrations without a process ID and one key reused with another body...
    app.clock.set(monday() + Duration::hours(1));
    let no_id = json!({"workflow": "order-intake", "department": "sales", "steps": []});
    let refused = app.api(Method::POST, "/api/v1/operations", &sales, Some("no-id-1"), Some(&no_id)).await;
    assert_eq!(refused.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", refused.body);
    assert!(refused.body.contains("process_id"), "the field is named: {}", refused.body);
    let blank = json!({"process_id": "  ", "workflow": "order-intake", "department": "sales", "steps": []});
    app.api(Method::POST, "/api/v1/operations", &sales, Some("no-id-2"), Some(&blank)).await;
    register(&app, &sales, "ORD-A").await;
    let other = json!({"process_id": "ORD-A2", "workflow": "order-intake", "department": "sales",
        "steps": [{"name": "register_order", "idempotency_key": "x-r"}, {"name": "ai_summary", "idempotency_key": "x-s"}]});
    let collision = app.api(Method::POST, "/api/v1/operations", &sales, Some("ORD-A"), Some(&other)).await;
    assert_eq!(collision.status, StatusCode::CONFLICT);
    // ...three completed steps, one failed and one unknown...
    register(&app, &sales, "ORD-B").await;
    register(&app, &sales, "ORD-C").await;
    let ok = json!({"seq": 1, "type": "succeeded", "result_id": "R-1"});
    step_event(&app, &sales, "ORD-A", "register_order", ok.clone()).await;
    step_event(
        &app,
        &sales,
        "ORD-A",
        "ai_summary",
        json!({"seq": 1, "type": "failed", "error": {"class": "server_error", "message": "503"}}),
    )
    .await;
    step_event(&app, &sales, "ORD-B", "register_order", ok.clone()).await;
    step_event(
        &app,
        &sales,
        "ORD-B",
        "ai_summary",
        json!({"seq": 1, "type": "unknown", "error": {"class": "timeout", "message": "no answer"}}),
    )
    .await;
    step_event(&app, &sales, "ORD-C", "register_order", ok).await;
    // ...three look-ups: one finds two records for one key, one fails, one was recorded by hand (not a look-up)...
    look_up(&app, "ORD-A", "orders", "executed", 2).await;
    look_up(&app, "ORD-B", "orders", "lookup_failed", 0).await;
    look_up(&app, "ORD-C", "manual", "executed", 0).await;
    // ...four reruns ended, one refused; three operations stalled.
    for action in [
        AuditAction::RerunDispatched,
        AuditAction::RerunDispatched,
        AuditAction::RerunDispatched,
        AuditAction::RerunRefused,
    ] {
        audited(&app, action, "sales", json!({})).await;
    }
    for event in ["temporary_failure", "temporary_failure", "result_unknown"] {
        audited(&app, AuditAction::OperationStalled, "sales", json!({"status": "stalled", "event": event})).await;
    }
    // And in billing, one more registration without a process ID.
    let billing_no_id = json!({"workflow": "monthly-billing", "department": "billing", "steps": []});
    app.api(Method::POST, "/api/v1/operations", &billing, Some("no-id-3"), Some(&billing_no_id)).await;

    let tanaka = app.sign_in("tanaka", PASSWORD).await;
    let week = review(&app, &tanaka, json!({"department": "sales"})).await;
    assert_eq!(week["period"], json!({"kind": "week", "start": "2026-11-30"}));
    assert_eq!(value(&week, "missing_process_id"), Some(2.0));
    assert_eq!(value(&week, "idempotency_collisions"), Some(1.0));
    // Step outcomes 5 (2 errors) + look-ups 2 (1 failed): 3 of 7.
    assert_eq!(row(&week, "outside_api_error_rate")["fraction"], json!([3, 7]));
    assert!((value(&week, "outside_api_error_rate").unwrap() - 300.0 / 7.0).abs() < 1e-9);
    assert_eq!(value(&week, "double_send_flags"), Some(1.0));
    assert_eq!(row(&week, "double_send_ratio")["fraction"], json!([1, 3]));
    assert_eq!(value(&week, "rerun_error_rate"), Some(25.0));
    assert_eq!(value(&week, "approval_latency_median"), None, "no decision this week");
    assert_eq!(value(&week, "stalled"), Some(3.0));
    assert_eq!(week["stalled_by_event"], json!([["result_unknown", 1], ["temporary_failure", 2]]));

    let before = review(&app, &tanaka, json!({"department": "sales", "day": "2026-11-25"})).await;
    assert_eq!(before["period"]["start"], "2026-11-23");
    assert_eq!(value(&before, "approval_latency_median"), Some(60.0), "30 and 90 minutes");
    assert_eq!(value(&before, "approval_latency_p90"), Some(84.0));
    assert_eq!(row(&week, "approval_latency_median")["previous"], json!(60.0), "the previous period is shown beside");

    // The auditor's review of every department counts billing's refusal too; a month holds the same week.
    let kansa = app.sign_in("kansa", PASSWORD).await;
    assert_eq!(value(&review(&app, &kansa, json!({})).await, "missing_process_id"), Some(3.0));
    let month = review(&app, &kansa, json!({"period": "month"})).await;
    assert_eq!(month["period"], json!({"kind": "month", "start": "2026-11-01"}));
    assert_eq!(value(&month, "missing_process_id"), Some(3.0));
    assert_eq!(value(&month, "approval_latency_median"), Some(60.0));

    // Another department's review does not exist for tanaka; a future period and a bad date are refused.
    let hidden = app.call_json("reviews/show", json!({"query": {"department": "billing"}}), Some(&tanaka)).await;
    assert_eq!(hidden.status, StatusCode::NOT_FOUND);
    let future = app.call_json("reviews/show", json!({"query": {"day": "2027-01-10"}}), Some(&tanaka)).await;
    assert_eq!(future.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", future.body);
    let refusal: contract::AppError = serde_json::from_str(&future.body).unwrap();
    assert_eq!(
        app::ui::error_in(words::i18n::Locale::ja, &refusal),
        "まだ始まっていない期間は振り返れません。日付を今日以前にしてください。"
    );
    let bad = app.call_json("reviews/show", json!({"query": {"period": "year"}}), Some(&tanaka)).await;
    assert_eq!(bad.status, StatusCode::UNPROCESSABLE_ENTITY);
}

/// The example configuration with one limit: more than one registration without a process ID a week in sales.
async fn with_threshold() -> TestApp {
    let mut config = example_config();
    config.thresholds = vec![Threshold {
        indicator: Indicator::MissingProcessId,
        above: 1.0,
        period: PeriodKind::Week,
        department: Some("sales".into()),
    }];
    TestApp::spawn_configured(|_| {}, config).await
}

async fn refuse_one(app: &TestApp, token: &str, key: &str) {
    let no_id = json!({"workflow": "order-intake", "department": "sales", "steps": []});
    app.api(Method::POST, "/api/v1/operations", token, Some(key), Some(&no_id)).await;
}

async fn notifications_of(app: &TestApp, username: &str) -> Vec<(String, String)> {
    let mut tx = app.db().begin_read().await.unwrap();
    let user = db::users::by_username(&mut tx, username).await.unwrap().unwrap();
    let rows = db::notifications::latest(&mut tx, user.id, 50).await.unwrap();
    rows.into_iter().map(|n| (n.kind, n.link)).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crossing_a_threshold_notifies_the_owners_once_and_a_new_period_starts_afresh() {
    let app = with_threshold().await;
    let token = app.token("intake", &["sales"]).await;
    app.user("tanaka", &["manager"], &["sales"]).await;
    app.user("suzuki", &["manager"], &["billing"]).await;

    refuse_one(&app, &token, "a").await;
    assert_eq!(reviews::check_thresholds(&app.state).await.unwrap(), 0, "one is not more than one");
    refuse_one(&app, &token, "b").await;
    assert_eq!(reviews::check_thresholds(&app.state).await.unwrap(), 1);
    refuse_one(&app, &token, "c").await;
    assert_eq!(reviews::check_thresholds(&app.state).await.unwrap(), 0, "still the same crossing");
    let told = notifications_of(&app, "tanaka").await;
    assert_eq!(told.iter().filter(|(kind, _)| kind == "threshold_crossed").count(), 1, "{told:?}");
    assert!(told[0].1.starts_with("/reviews?department=sales&period=week&day=2026-11-30"), "{told:?}");
    assert!(notifications_of(&app, "suzuki").await.is_empty(), "other departments' owners are not told");
    let crossed = app.audit_actions().await.iter().filter(|a| *a == "indicator.threshold_crossed").count();
    assert_eq!(crossed, 1);

    // The review shows the crossing beside the limit.
    let tanaka = app.sign_in("tanaka", PASSWORD).await;
    let week = review(&app, &tanaka, json!({"department": "sales"})).await;
    assert_eq!(row(&week, "missing_process_id")["threshold"], json!(1.0));
    assert!(row(&week, "missing_process_id")["crossed_at"].is_string(), "{week}");
    assert!(row(&week, "stalled")["crossed_at"].is_null());

    // Next week counts from zero: crossing again is a new crossing, told again.
    app.clock.advance(Duration::days(7));
    refuse_one(&app, &token, "d").await;
    refuse_one(&app, &token, "e").await;
    assert_eq!(reviews::check_thresholds(&app.state).await.unwrap(), 1);
    let told = notifications_of(&app, "tanaka").await;
    assert_eq!(told.iter().filter(|(kind, _)| kind == "threshold_crossed").count(), 2, "{told:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_manager_of_the_department_signs_off_a_review_once_with_a_comment_and_the_next_lists_what_changed() {
    let app = with_threshold().await;
    let token = app.token("intake", &["sales"]).await;
    app.user("tanaka", &["manager"], &["sales"]).await;
    app.user("sato", &["staff"], &["sales"]).await;
    app.user("suzuki", &["manager"], &["billing"]).await;
    let (tanaka, sato, suzuki) = (
        app.sign_in("tanaka", PASSWORD).await,
        app.sign_in("sato", PASSWORD).await,
        app.sign_in("suzuki", PASSWORD).await,
    );
    let form = |comment: &'static str| {
        [("department", "sales"), ("period", "week"), ("day", "2026-11-30"), ("comment", comment)]
    };

    let week = review(&app, &tanaka, json!({"department": "sales"})).await;
    assert_eq!((week["may_sign_off"].clone(), week["signoff"].clone()), (json!(true), Value::Null));
    assert_eq!(review(&app, &sato, json!({"department": "sales"})).await["may_sign_off"], false);
    assert_eq!(app.call("reviews/sign_off", &form("見ました"), Some(&sato)).await.status, StatusCode::FORBIDDEN);
    assert_eq!(app.call("reviews/sign_off", &form("見ました"), Some(&suzuki)).await.status, StatusCode::NOT_FOUND);
    let empty = app.call("reviews/sign_off", &form("  "), Some(&tanaka)).await;
    assert_eq!(empty.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", empty.body);

    let signed = app.call("reviews/sign_off", &form("二重送信なし。来週も確認する。"), Some(&tanaka)).await;
    assert_eq!(signed.status, StatusCode::OK, "{}", signed.body);
    let again = app.call("reviews/sign_off", &form("もう一度"), Some(&tanaka)).await;
    assert_eq!(again.status, StatusCode::CONFLICT);
    let week = review(&app, &tanaka, json!({"department": "sales"})).await;
    assert_eq!(week["signoff"]["comment"], "二重送信なし。来週も確認する。");
    assert_eq!(week["may_sign_off"], false);
    let events = {
        let mut tx = app.db().begin_read().await.unwrap();
        db::audit::for_object(&mut tx, "review", "sales/week/2026-11-30", 10).await.unwrap()
    };
    assert_eq!(events.iter().map(|e| e.action.as_str()).collect::<Vec<_>>(), ["review.signed_off"]);

    // Next week, a crossing happens: the review lists it as changed since the last review.
    app.clock.advance(Duration::days(7));
    refuse_one(&app, &token, "a").await;
    refuse_one(&app, &token, "b").await;
    reviews::check_thresholds(&app.state).await.unwrap();
    let tanaka = app.sign_in("tanaka", PASSWORD).await;
    let next = review(&app, &tanaka, json!({"department": "sales"})).await;
    assert_eq!(next["last_review"]["comment"], "二重送信なし。来週も確認する。");
    let changes = next["changes"].as_array().unwrap();
    assert!(
        changes.iter().any(|c| c["kind"] == "threshold_crossed" && c["subject"] == "missing_process_id"),
        "{changes:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_charts_are_svg_images_and_the_csv_holds_every_indicator_of_twelve_periods() {
    let app = TestApp::spawn().await;
    let token = app.token("intake", &["sales"]).await;
    app.user("tanaka", &["manager"], &["sales"]).await;
    refuse_one(&app, &token, "a").await;
    let tanaka = app.sign_in("tanaka", PASSWORD).await;
    let get = |path: &'static str, cookie: Option<String>| {
        let mut request = app.http.get(format!("{}{path}", app.url));
        if let Some(cookie) = cookie {
            request = request.header("cookie", cookie);
        }
        request.send()
    };

    for chart in ["rates", "counts", "latency"] {
        let path: &'static str =
            Box::leak(format!("/reviews/chart.svg?chart={chart}&department=sales&period=week").into_boxed_str());
        let answer = get(path, Some(tanaka.clone())).await.unwrap();
        assert_eq!(answer.status(), StatusCode::OK);
        assert_eq!(answer.headers()["content-type"], "image/svg+xml; charset=utf-8");
        let svg = answer.text().await.unwrap();
        assert!(svg.starts_with("<svg") && svg.contains("11/30"), "{chart}: {svg}");
    }
    assert_eq!(
        get("/reviews/chart.svg?chart=pie", Some(tanaka.clone())).await.unwrap().status(),
        StatusCode::UNPROCESSABLE_ENTITY
    );
    assert_eq!(get("/reviews/chart.svg?chart=rates", None).await.unwrap().status(), StatusCode::UNAUTHORIZED);
    assert_eq!(
        get("/reviews/chart.svg?chart=rates&department=billing", Some(tanaka.clone())).await.unwrap().status(),
        StatusCode::NOT_FOUND
    );

    // People read the columns in their language; tools ask for the codes.
    let in_words = get("/reviews.csv?department=sales&period=week", Some(tanaka.clone())).await.unwrap();
    let in_words = in_words.text().await.unwrap();
    assert!(in_words.starts_with("\u{FEFF}期間,開始,終了,部門,指標,"), "{in_words}");
    assert!(in_words.contains(",営業部,") && !in_words.contains(",sales,"), "values in words too: {in_words}");
    let csv = get("/reviews.csv?department=sales&period=week&columns=codes", Some(tanaka.clone())).await.unwrap();
    assert_eq!(csv.status(), StatusCode::OK);
    assert!(csv.headers()["content-disposition"].to_str().unwrap().contains("attachment"));
    let text = csv.text().await.unwrap();
    let mut reader = csv::Reader::from_reader(text.as_bytes());
    let header: Vec<String> = reader.headers().unwrap().iter().map(str::to_string).collect();
    assert_eq!(
        header,
        ["period", "start", "end", "department", "indicator", "unit", "value", "part", "whole", "threshold"]
    );
    let rows: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
    assert_eq!(rows.len(), 12 * Indicator::ALL.len());
    let this_week = rows.iter().find(|r| &r[1] == "2026-11-30" && &r[4] == "missing_process_id").unwrap();
    assert_eq!((&this_week[3], &this_week[6]), ("sales", "1"));
    assert_eq!(&rows[0][1], "2026-09-14", "eleven weeks before, oldest first");
    assert!(app.audit_actions().await.contains(&"review.exported".to_string()));
}
