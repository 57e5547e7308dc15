//! Several instances on one PostgreSQL (issue 9): three server processes share the sessions, dispatch 1,000
//! approved reruns together with exactly 1,000 distinct `webhook-id`s at the receiver, and one of them killed
//! mid-run loses nothing (its leases end and the others take its work over); a stopped one (SIGTERM) first
//! finishes the reruns it claimed.
use crate::crash_safety::{app_with, config_sending_to, receiver_taking, serve};
use crate::fixtures::caller;
use crate::harness::{PASSWORD, TestApp};
use backend::services::{api_clients, approvals, registration, rerun_requests, step_events, sweeper};
use chrono::{Duration, Utc};
use contract::reruns::StartAnswer;
use reqwest::StatusCode;
use serde_json::json;
use std::time::Instant;

const RERUNS: usize = 1_000;

/// `count` stalled orders, each with an approved rerun in the outbox (made through the services, quickly).
async fn approved_reruns(app: &TestApp, count: usize) {
    let token = app.token("intake", &["sales"]).await;
    let client = api_clients::authenticate(&app.state, &token).await.unwrap().unwrap();
    for i in 0..count {
        let id = format!("ORD-M{i}");
        let body = json!({"process_id": id, "workflow": "order-intake", "department": "sales",
            "steps": [{"name": "register_order", "idempotency_key": format!("{id}-r")},
                      {"name": "ai_summary", "idempotency_key": format!("{id}-s")}]});
        registration::register(&app.state, &client, &id, &body).await.unwrap();
        let failed = serde_json::from_value(
            json!({"seq": 1, "type": "failed", "error": {"class": "server_error", "message": "503"}}),
        )
        .unwrap();
        step_events::report(&app.state, &client, &id, "register_order", failed).await.unwrap();
    }
    app.clock.advance(Duration::minutes(5)); // past the look-ups' consistency delay
    sweeper::sweep(&app.state).await.unwrap();
    let (staff, owner) = (caller(app, "sato").await, caller(app, "suzuki").await);
    for i in 0..count {
        let StartAnswer::Created { id } =
            rerun_requests::start(&app.state, &staff, &format!("ORD-M{i}"), "再実行する").await.unwrap()
        else {
            panic!("the plan should be ready")
        };
        for n in 1..=5 {
            let cause =
                rerun_requests::Cause { class: Some("outside_service_outage".into()), text: Some("503".into()) };
            rerun_requests::confirm(&app.state, &staff, &id, n, "確認した", cause).await.unwrap();
        }
        rerun_requests::submit(&app.state, &staff, &id).await.unwrap();
        approvals::decide(&app.state, &owner, &id, domain::approval::Decision::Approve, "").await.unwrap();
    }
}

async fn dispatched(app: &TestApp) -> i64 {
    crate::fixtures::count(app, "SELECT COUNT(*) FROM rerun_requests WHERE status = $1", "dispatched").await
}

async fn ready(http: &reqwest::Client, base: &str) {
    for _ in 0..200 {
        if http.get(format!("{base}/healthz")).send().await.is_ok_and(|r| r.status().is_success()) {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    panic!("{base} did not start");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_instances_share_sessions_and_dispatch_a_thousand_reruns_exactly_once_though_one_is_killed() {
    // Each rerun takes the receiver 200 ms, so that the thousand take the three instances seconds (a dispatcher sends
    // its next batch while the last is written).
    let (receiver, url) = receiver_taking(std::time::Duration::from_millis(200)).await;
    let config = config_sending_to(&url);
    let app = app_with(&config).await;
    if app.db().engine() != "postgres" {
        let _ = std::fs::remove_file(&config);
        return; // several processes on one database is the PostgreSQL deployment
    }
    // The child servers use the real clock: the approvals happen just before they start.
    app.clock.set(Utc::now() - Duration::minutes(10));
    app.user("sato", &["staff"], &["sales"]).await;
    app.user("suzuki", &["manager"], &["sales"]).await;
    approved_reruns(&app, RERUNS).await;

    let mut instances: Vec<_> = (0..3).map(|_| serve(&app.database_url, &config, None)).collect();
    let http = reqwest::Client::new();
    for (_, base) in &instances {
        ready(&http, base).await;
    }

    // One instance dies (SIGKILL) while the three are dispatching, as soon as they are.
    let started = Instant::now();
    while receiver.effects.lock().unwrap().len() < RERUNS / 5 {
        assert!(started.elapsed().as_secs() < 60, "dispatching did not start");
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    let (mut killed, _) = instances.remove(0);
    killed.kill().unwrap();
    killed.wait().unwrap();
    let at_kill = receiver.effects.lock().unwrap().len();
    eprintln!("one instance killed after {at_kill} effects, {:?} into the dispatch", started.elapsed());
    assert!(at_kill < RERUNS, "the kill came after the work was done ({at_kill})");

    // Signed in on one of the two left, working on the other: the session is the database's, not an instance's.
    let cookie = crate::harness::sign_in_at(&http, &instances[0].1, "sato", PASSWORD).await;
    for (_, base) in &instances[1..] {
        let board = http
            .post(format!("{base}/api/board/stalled"))
            .header("cookie", &cookie)
            .header("content-type", "application/json")
            .body(json!({"filter": {}}).to_string())
            .send()
            .await
            .unwrap();
        assert_eq!(board.status(), StatusCode::OK, "the session is known to {base}");
    }

    while dispatched(&app).await < RERUNS as i64 {
        assert!(started.elapsed().as_secs() < 120, "only {} of {RERUNS} dispatched", dispatched(&app).await);
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    for (mut child, _) in instances {
        child.kill().unwrap();
        child.wait().unwrap();
    }
    let _ = std::fs::remove_file(&config);
    let effects = receiver.effects.lock().unwrap().len();
    let deliveries = *receiver.deliveries.lock().unwrap();
    assert_eq!(effects, RERUNS, "exactly one distinct webhook-id per rerun");
    assert!(
        deliveries >= RERUNS,
        "a delivery cut short by the kill may be repeated with the same webhook-id: {deliveries}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_instance_told_to_stop_finishes_the_reruns_it_claimed_and_leaves_the_rest_unclaimed() {
    let (receiver, url) = receiver_taking(std::time::Duration::from_millis(300)).await;
    let config = config_sending_to(&url);
    let app = app_with(&config).await;
    app.clock.set(Utc::now() - Duration::minutes(10));
    app.user("sato", &["staff"], &["sales"]).await;
    app.user("suzuki", &["manager"], &["sales"]).await;
    approved_reruns(&app, 40).await;
    let (mut instance, _) = serve(&app.database_url, &config, None);

    let started = Instant::now();
    while *receiver.deliveries.lock().unwrap() == 0 {
        assert!(started.elapsed().as_secs() < 30, "dispatching did not start");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let term = std::process::Command::new("kill").args(["-TERM", &instance.id().to_string()]).status().unwrap();
    assert!(term.success());
    let stopped = loop {
        if let Some(status) = instance.try_wait().unwrap() {
            break status;
        }
        assert!(started.elapsed().as_secs() < 30, "the instance did not stop");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    };
    let _ = std::fs::remove_file(&config);
    assert!(stopped.success(), "a clean exit: {stopped:?}");
    let abandoned = crate::fixtures::count(
        &app,
        "SELECT COUNT(*) FROM dispatches WHERE status = $1 AND lease_until IS NOT NULL",
        "pending",
    )
    .await;
    assert_eq!(abandoned, 0, "no claimed rerun is left for its lease to run out");
    let sent = dispatched(&app).await;
    assert!((1..40).contains(&sent), "it finished what it had claimed, and claimed no more: {sent}");
    assert_eq!(receiver.effects.lock().unwrap().len() as i64, sent, "every rerun marked dispatched was delivered");
}
