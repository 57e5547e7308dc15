//! The stop switch: a paused workflow or outside system holds its approved reruns in the outbox (nothing lost,
//! nothing sent) and sends each exactly once after the resume; ingestion and the sweeper go on meanwhile.
use crate::dispatch::Receiver;
use crate::fixtures::{approved_request, caller, stalled, submitted};
use crate::harness::TestApp;
use backend::services::approvals::decide;
use backend::services::{Caller, dispatcher::dispatch_due, stop_switch};
use chrono::Duration;
use contract::AppError;
use domain::approval::Decision;
use domain::stop_switch::Scope;
use reqwest::Method;
use serde_json::json;

struct Switch {
    app: TestApp,
    token: String,
    receiver: Receiver,
    staff: Caller,
}

async fn switch() -> Switch {
    let (receiver, url) = Receiver::start(&[]).await;
    let mut config = crate::harness::example_config();
    for w in &mut config.workflows {
        w.rerun_url = url.clone();
        w.rerun_allow_loopback = true;
    }
    let app = TestApp::spawn_configured(|s| s.dispatch_timeout = std::time::Duration::from_secs(2), config).await;
    let token = app.token("intake", &["sales"]).await;
    app.user("sato", &["staff"], &["sales"]).await;
    app.user("suzuki", &["manager"], &["sales"]).await;
    let staff = caller(&app, "sato").await;
    Switch { app, token, receiver, staff }
}

impl Switch {
    /// The department's owner, signed in just now (stopping and resuming need a recent sign-in).
    async fn owner(&self) -> Caller {
        caller(&self.app, "suzuki").await
    }

    /// A minute of dispatcher rounds, a few seconds apart.
    async fn dispatch_a_minute(&self) {
        for _ in 0..12 {
            self.app.clock.advance(Duration::seconds(5));
            while dispatch_due(&self.app.state).await.unwrap() > 0 {}
        }
    }

    fn sent(&self) -> Vec<String> {
        let body = |b: &[u8]| {
            serde_json::from_slice::<serde_json::Value>(b).unwrap()["process_id"].as_str().unwrap().to_string()
        };
        self.receiver.requests().iter().map(|(_, b)| body(b)).collect()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_workflow_holds_an_approved_rerun_and_sends_it_exactly_once_after_the_resume() {
    let s = switch().await;
    stop_switch::pause(&s.app.state, &s.owner().await, Scope::Workflow, "order-intake", "受注システムの認証が切れた")
        .await
        .unwrap();
    let id = approved_request(&s.app, &s.token, &s.staff, &s.owner().await, "ORD-P1").await;
    s.dispatch_a_minute().await;
    assert!(s.sent().is_empty(), "nothing is sent while paused");
    let mut tx = s.app.db().begin_read().await.unwrap();
    let waiting = backend::db::dispatches::get(&mut tx, &id).await.unwrap().unwrap();
    drop(tx);
    assert_eq!((waiting.status.as_str(), waiting.attempts), ("pending", 0), "it waits in the outbox, no attempt used");

    // Ingestion and the sweeper keep working while paused.
    stalled(&s.app, &s.token, "ORD-P2").await;
    let p2 = s.app.api(Method::GET, "/api/v1/operations/ORD-P2", &s.token, None, None).await.json();
    assert_eq!(p2["status"], "stalled");

    let resume = stop_switch::resume(&s.app.state, &s.owner().await, Scope::Workflow, "order-intake", " ").await;
    assert!(matches!(resume, Err(AppError::Validation(_))), "resuming needs a reason too");
    stop_switch::resume(&s.app.state, &s.owner().await, Scope::Workflow, "order-intake", "認証情報を更新した")
        .await
        .unwrap();
    s.dispatch_a_minute().await;
    s.dispatch_a_minute().await;
    assert_eq!(s.sent(), vec!["ORD-P1".to_string()], "sent exactly once after the resume");
    let actions = s.app.audit_actions().await;
    assert!(actions.contains(&"dispatch.paused".to_string()) && actions.contains(&"dispatch.resumed".to_string()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_outside_system_holds_only_the_reruns_that_would_call_it() {
    let s = switch().await;
    // ORD-C1 reruns both steps (the order system and the AI); ORD-C2 only the order, its summary being done.
    stalled(&s.app, &s.token, "ORD-C1").await;
    let body = json!({"process_id": "ORD-C2", "workflow": "order-intake", "department": "sales",
        "steps": [{"name": "register_order", "idempotency_key": "ORD-C2-r"}, {"name": "ai_summary", "idempotency_key": "ORD-C2-s"}]});
    s.app.api(Method::POST, "/api/v1/operations", &s.token, Some("ORD-C2"), Some(&body)).await;
    let done = json!({"seq": 1, "type": "succeeded", "result_id": "resp_c2"});
    s.app.api(Method::POST, "/api/v1/operations/ORD-C2/steps/ai_summary/events", &s.token, None, Some(&done)).await;
    let failed = json!({"seq": 1, "type": "failed", "error": {"class": "server_error", "message": "503"}});
    s.app
        .api(Method::POST, "/api/v1/operations/ORD-C2/steps/register_order/events", &s.token, None, Some(&failed))
        .await;
    s.app.clock.advance(Duration::minutes(5));
    backend::services::sweeper::sweep(&s.app.state).await.unwrap();

    stop_switch::pause(&s.app.state, &s.owner().await, Scope::Connector, "ai-summary", "AI の API が制限中")
        .await
        .unwrap();
    for process_id in ["ORD-C1", "ORD-C2"] {
        let id = submitted(&s.app, &s.staff, process_id).await;
        decide(&s.app.state, &s.owner().await, &id, Decision::Approve, "").await.unwrap();
    }
    s.dispatch_a_minute().await;
    assert_eq!(s.sent(), vec!["ORD-C2".to_string()], "only the rerun that does not call the paused system goes");
    stop_switch::resume(&s.app.state, &s.owner().await, Scope::Connector, "ai-summary", "制限が解除された")
        .await
        .unwrap();
    s.dispatch_a_minute().await;
    assert_eq!(s.sent(), vec!["ORD-C2".to_string(), "ORD-C1".to_string()]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_owners_of_what_it_concerns_and_admins_switch_it_and_the_board_shows_the_banner() {
    let s = switch().await;
    s.app.user("ito", &["manager"], &["billing"]).await;
    s.app.user("root", &["admin"], &[]).await;
    let (ito, root) = (caller(&s.app, "ito").await, caller(&s.app, "root").await);
    let pause = |who: &Caller, scope, name: &'static str| {
        let state = s.app.state.clone();
        let who = who.clone();
        async move { stop_switch::pause(&state, &who, scope, name, "止める").await }
    };
    assert!(
        matches!(pause(&s.staff, Scope::Workflow, "order-intake").await, Err(AppError::Forbidden)),
        "staff do not switch"
    );
    assert!(
        matches!(pause(&ito, Scope::Workflow, "order-intake").await, Err(AppError::Forbidden)),
        "another department's owner"
    );
    assert!(matches!(pause(&ito, Scope::Connector, "nothing-like-it").await, Err(AppError::NotFound)));
    pause(&root, Scope::Connector, "order-api").await.unwrap();
    let twice = pause(&s.owner().await, Scope::Connector, "order-api").await;
    assert!(
        matches!(twice, Err(AppError::Conflict { ref problem, .. }) if *problem == contract::Conflict::AlreadyPaused),
        "{twice:?}"
    );
    let page = backend::services::board::stalled(&s.app.state, &s.staff, Default::default()).await.unwrap();
    assert_eq!(page.pauses.len(), 1);
    assert_eq!(
        (page.pauses[0].scope.as_str(), page.pauses[0].name.as_str(), page.pauses[0].reason.as_str()),
        ("connector", "order-api", "止める")
    );
}
