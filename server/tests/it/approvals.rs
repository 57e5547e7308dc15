//! Approval by the department's owners (QUALITY 20): exactly one approval and one dispatch however many
//! decide at once; four eyes; a reason to reject; bound to the plan; valid for a limited time; N of M.
use crate::fixtures::{caller, count, pending_request};
use crate::harness::TestApp;
use backend::services::approvals::decide;
use chrono::Duration;
use domain::approval::Decision;
use reqwest::Method;
use serde_json::json;
use std::sync::Arc;

async fn approved_events(app: &TestApp, id: &str) -> usize {
    let mut tx = app.db().begin_read().await.unwrap();
    let events = backend::db::audit::page_after(&mut tx, 0, 100_000).await.unwrap();
    events
        .iter()
        .filter(|e| e.action == "rerun_request.approved" && e.after_json.as_deref().is_some_and(|a| a.contains(id)))
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twenty_owners_approving_at_once_make_one_approval_one_dispatch_and_one_audit_event_every_time() {
    let app = TestApp::spawn().await;
    let token = app.token("intake", &["sales"]).await;
    app.user("sato", &["staff"], &["sales"]).await;
    let staff = caller(&app, "sato").await;
    for i in 0..20 {
        app.user(&format!("owner{i}"), &["manager"], &["sales"]).await;
    }
    let rounds = std::env::var("RERUN_GATE_APPROVAL_ROUNDS").ok().and_then(|r| r.parse().ok()).unwrap_or(100);
    for round in 0..rounds {
        let id = pending_request(&app, &token, &staff, &format!("ORD-R{round}")).await;
        // Signed in just now (the test's clock moves on with every request).
        let mut managers = Vec::new();
        for i in 0..20 {
            managers.push(caller(&app, &format!("owner{i}")).await);
        }
        let barrier = Arc::new(tokio::sync::Barrier::new(managers.len()));
        let mut tasks = Vec::new();
        for manager in &managers {
            let (state, manager, barrier, id) = (app.state.clone(), manager.clone(), barrier.clone(), id.clone());
            tasks.push(tokio::spawn(async move {
                barrier.wait().await;
                decide(&state, &manager, &id, Decision::Approve, "").await.is_ok()
            }));
        }
        let mut succeeded = 0;
        for task in tasks {
            succeeded += task.await.unwrap() as usize;
        }
        assert_eq!(succeeded, 1, "round {round}: exactly one approval goes through");
        assert_eq!(count(&app, "SELECT COUNT(*) FROM approvals WHERE request_id = $1", &id).await, 1, "round {round}");
        assert_eq!(count(&app, "SELECT COUNT(*) FROM dispatches WHERE request_id = $1", &id).await, 1, "round {round}");
        assert_eq!(approved_events(&app, &id).await, 1, "round {round}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_requester_cannot_approve_and_a_rejection_needs_a_reason_and_goes_back_to_staff() {
    let app = TestApp::spawn().await;
    let token = app.token("intake", &["sales"]).await;
    app.user("suzuki", &["staff", "manager"], &["sales"]).await;
    app.user("takahashi", &["manager"], &["sales"]).await;
    app.user("tanaka", &["auditor"], &[]).await;
    let (suzuki, takahashi) = (caller(&app, "suzuki").await, caller(&app, "takahashi").await);
    let id = pending_request(&app, &token, &suzuki, "ORD-A").await;

    let own = decide(&app.state, &suzuki, &id, Decision::Approve, "").await;
    assert!(matches!(own, Err(contract::AppError::Forbidden)), "{own:?}");
    let auditor = decide(&app.state, &caller(&app, "tanaka").await, &id, Decision::Approve, "").await;
    assert!(matches!(auditor, Err(contract::AppError::Forbidden)), "{auditor:?}");
    let bare = decide(&app.state, &takahashi, &id, Decision::Reject, " ").await;
    assert!(matches!(bare, Err(contract::AppError::Validation(_))), "{bare:?}");
    decide(&app.state, &takahashi, &id, Decision::Reject, "原因の分析が足りない").await.unwrap();

    let operation = app.api(Method::GET, "/api/v1/operations/ORD-A", &token, None, None).await.json();
    assert_eq!(operation["status"], "stalled", "back to staff");
    assert_eq!(count(&app, "SELECT COUNT(*) FROM dispatches WHERE request_id = $1", &id).await, 0);
    assert!(app.audit_actions().await.contains(&"rerun_request.rejected".to_string()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_changed_verdict_voids_the_approval_and_an_expired_request_cannot_be_approved() {
    let app = TestApp::spawn().await;
    let token = app.token("intake", &["sales"]).await;
    app.user("sato", &["staff"], &["sales"]).await;
    app.user("suzuki", &["manager"], &["sales"]).await;
    let (staff, owner) = (caller(&app, "sato").await, caller(&app, "suzuki").await);

    let changed = pending_request(&app, &token, &staff, "ORD-V").await;
    app.demo_systems().execute(backend::demo::systems::Service::Ai, "ORD-V-s", &json!({}), None).await.unwrap();
    backend::services::reconciliation::on_demand(&app.state, &staff, "ORD-V").await.unwrap();
    let void = decide(&app.state, &owner, &changed, Decision::Approve, "").await;
    assert!(
        matches!(&void, Err(contract::AppError::Conflict { problem, .. }) if *problem == contract::Conflict::PlanChanged),
        "{void:?}"
    );
    assert_eq!(count(&app, "SELECT COUNT(*) FROM dispatches WHERE request_id = $1", &changed).await, 0);

    let late = pending_request(&app, &token, &staff, "ORD-E").await;
    app.clock.advance(Duration::hours(25));
    let owner = caller(&app, "suzuki").await; // signed in again the next day
    let expired = decide(&app.state, &owner, &late, Decision::Approve, "").await;
    assert!(
        matches!(&expired, Err(contract::AppError::Conflict { problem, .. }) if *problem == contract::Conflict::Expired),
        "{expired:?}"
    );
    let operation = app.api(Method::GET, "/api/v1/operations/ORD-E", &token, None, None).await.json();
    assert_eq!(operation["status"], "stalled");
    let actions = app.audit_actions().await;
    assert!(
        actions.contains(&"rerun_request.voided".to_string()) && actions.contains(&"rerun_request.expired".to_string())
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_of_two_owners_must_approve_when_the_workflow_says_so() {
    let mut config = crate::harness::example_config();
    config.workflows.iter_mut().for_each(|w| w.approvals_required = 2);
    let app = TestApp::spawn_configured(|_| {}, config).await;
    let token = app.token("intake", &["sales"]).await;
    app.user("sato", &["staff"], &["sales"]).await;
    app.user("suzuki", &["manager"], &["sales"]).await;
    app.user("takahashi", &["manager"], &["sales"]).await;
    let staff = caller(&app, "sato").await;
    let id = pending_request(&app, &token, &staff, "ORD-N").await;
    decide(&app.state, &caller(&app, "suzuki").await, &id, Decision::Approve, "").await.unwrap();
    assert_eq!(count(&app, "SELECT COUNT(*) FROM dispatches WHERE request_id = $1", &id).await, 0, "one of two");
    let again = decide(&app.state, &caller(&app, "suzuki").await, &id, Decision::Approve, "").await;
    assert!(again.is_err(), "the same owner does not count twice");
    decide(&app.state, &caller(&app, "takahashi").await, &id, Decision::Approve, "問題なし").await.unwrap();
    assert_eq!(count(&app, "SELECT COUNT(*) FROM dispatches WHERE request_id = $1", &id).await, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn owners_hear_of_a_request_for_approval_and_the_requester_of_the_decision() {
    let app = TestApp::spawn().await;
    let token = app.token("intake", &["sales"]).await;
    app.user("sato", &["staff"], &["sales"]).await;
    app.user("suzuki", &["manager"], &["sales"]).await;
    app.user("ito", &["manager"], &["billing"]).await;
    let (sato, suzuki, ito) = (caller(&app, "sato").await, caller(&app, "suzuki").await, caller(&app, "ito").await);
    let id = pending_request(&app, &token, &sato, "ORD-M").await;
    let unread = |c: &backend::services::Caller| {
        let (state, c) = (app.state.clone(), c.clone());
        async move { backend::services::notifications::unread(&state, &c).await.unwrap() }
    };
    assert_eq!(
        (unread(&suzuki).await, unread(&ito).await, unread(&sato).await),
        (1, 0, 0),
        "only the department's owners"
    );
    decide(&app.state, &suzuki, &id, Decision::Approve, "").await.unwrap();
    assert_eq!(unread(&sato).await, 1);
    let list = backend::services::notifications::latest(&app.state, &sato).await.unwrap();
    assert!(list[0].title.contains("ORD-M") && list[0].link == format!("/reruns/{id}"), "{list:?}");
    backend::services::notifications::mark_all_read(&app.state, &sato).await.unwrap();
    assert_eq!(unread(&sato).await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_nobody_decides_on_expires_with_the_sweep_and_goes_back_to_staff() {
    let app = TestApp::spawn().await;
    let token = app.token("intake", &["sales"]).await;
    app.user("sato", &["staff"], &["sales"]).await;
    let id = pending_request(&app, &token, &caller(&app, "sato").await, "ORD-X").await;
    backend::services::sweeper::sweep(&app.state).await.unwrap();
    assert_eq!(count(&app, "SELECT COUNT(*) FROM rerun_requests WHERE id = $1 AND status = 'expired'", &id).await, 0);
    app.clock.advance(Duration::hours(25));
    backend::services::sweeper::sweep(&app.state).await.unwrap();
    assert_eq!(count(&app, "SELECT COUNT(*) FROM rerun_requests WHERE id = $1 AND status = 'expired'", &id).await, 1);
    let operation = app.api(Method::GET, "/api/v1/operations/ORD-X", &token, None, None).await.json();
    assert_eq!(operation["status"], "stalled");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_team_chat_hears_of_requests_when_a_chat_webhook_is_configured() {
    let mut config = crate::harness::example_config();
    config.chat_webhook_url_env = Some("RG_TEST_CHAT_URL".into());
    config.chat_webhook_allow_loopback = true;
    let app = TestApp::spawn_configured(|_| {}, config).await;
    let token = app.token("intake", &["sales"]).await;
    app.user("sato", &["staff"], &["sales"]).await;
    app.user("suzuki", &["manager"], &["sales"]).await;
    let id = pending_request(&app, &token, &caller(&app, "sato").await, "ORD-CHAT-7").await;
    decide(&app.state, &caller(&app, "suzuki").await, &id, Decision::Approve, "").await.unwrap();
    assert_eq!(backend::services::notifications::send_outbound(&app.state).await.unwrap(), 2);
    let heard: Vec<String> =
        crate::harness::CHAT_MESSAGES.lock().unwrap().iter().filter(|m| m.contains("ORD-CHAT-7")).cloned().collect();
    assert_eq!(heard.len(), 2, "{heard:?}");
    assert!(heard.iter().all(|m| m.contains(&format!("/reruns/{id}"))), "{heard:?}");
    assert!(heard[0].contains("再実行の承認をお願いします"), "the chat speaks Japanese by default: {heard:?}");
    assert_eq!(backend::services::notifications::send_outbound(&app.state).await.unwrap(), 0, "each once");
}
