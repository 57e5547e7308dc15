//! The gate's promises at their edges (QUALITY 11, 31–33): four eyes on bulk reruns as on single ones, reading
//! everything is never a right to act, the approved plan is checked again right before each send, a pause is
//! resumed by the department that set it, and a webhook reaches only the step it is about.
use crate::dispatch::Receiver;
use crate::fixtures::{approved_request, caller, count, stalled, submitted};
use crate::harness::TestApp;
use backend::services::approvals::decide;
use backend::services::{
    Caller, batches, dispatcher::dispatch_due, holds, incidents, reconciliation, rerun_requests, stop_switch,
};
use chrono::Duration;
use contract::AppError;
use contract::batches::Selection;
use domain::approval::Decision;
use domain::reconciliation::Verdict;
use domain::stop_switch::Scope;
use reqwest::{Method, StatusCode};
use serde_json::json;

/// The example configuration with reruns sent to `url`, and each workflow asking for `approvals` owners.
fn config(url: &str, approvals: u32) -> backend::config::Config {
    let mut config = crate::harness::example_config();
    for w in &mut config.workflows {
        w.rerun_url = url.to_string();
        w.rerun_allow_loopback = true;
        w.approvals_required = approvals;
    }
    config.bulk_dispatch_per_minute = 600;
    config
}

struct Gate {
    app: TestApp,
    token: String,
    receiver: Receiver,
}

async fn gate(approvals: u32) -> Gate {
    let (receiver, url) = Receiver::start(&[]).await;
    let app =
        TestApp::spawn_configured(|s| s.dispatch_timeout = std::time::Duration::from_secs(2), config(&url, approvals))
            .await;
    let token = app.token("intake", &["sales", "billing"]).await;
    app.user("sato", &["staff"], &["sales"]).await;
    app.user("suzuki", &["manager"], &["sales"]).await;
    app.user("takahashi", &["manager"], &["sales"]).await;
    app.user("yamada", &["manager"], &["sales"]).await;
    Gate { app, token, receiver }
}

impl Gate {
    async fn who(&self, username: &str) -> Caller {
        caller(&self.app, username).await
    }

    /// A bulk rerun of `process_ids`, previewed by sato and requested by `requester` (who becomes the requester of
    /// every member's rerun request), its five checks confirmed and sent for approval.
    async fn bulk_requested_by(&self, process_ids: &[&str], requester: &str) -> String {
        for process_id in process_ids {
            stalled(&self.app, &self.token, process_id).await;
        }
        let selection =
            Selection { process_ids: process_ids.iter().map(|p| p.to_string()).collect(), ..Selection::default() };
        let id =
            batches::create(&self.app.state, &self.who("sato").await, selection, "障害で止まった分").await.unwrap();
        for _ in 0..600 {
            if batches::view(&self.app.state, &self.who("sato").await, &id).await.unwrap().status.as_str()
                != "previewing"
            {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        let requester = self.who(requester).await;
        batches::request(&self.app.state, &requester, &id, None).await.unwrap();
        for n in 1..=5 {
            let cause =
                rerun_requests::Cause { class: Some("outside_service_outage".into()), text: Some("503".into()) };
            batches::confirm(&self.app.state, &requester, &id, n, "確認した", cause).await.unwrap();
        }
        batches::submit(&self.app.state, &requester, &id).await.unwrap();
        id
    }

    async fn batch_status(&self, id: &str) -> String {
        batches::view(&self.app.state, &self.who("sato").await, id).await.unwrap().status.to_string()
    }

    async fn dispatches(&self, process_id: &str) -> i64 {
        let sql = "SELECT COUNT(*) FROM dispatches d JOIN rerun_requests r ON r.id = d.request_id
                   JOIN operations o ON o.id = r.operation_id WHERE o.process_id = $1";
        count(&self.app, sql, process_id).await
    }

    /// A minute of dispatcher rounds, a few seconds apart.
    async fn dispatch_a_minute(&self) {
        for _ in 0..12 {
            self.app.clock.advance(Duration::seconds(5));
            while dispatch_due(&self.app.state).await.unwrap() > 0 {}
        }
    }

    async fn request_status(&self, id: &str) -> String {
        let mut tx = self.app.db().begin_read().await.unwrap();
        backend::db::rerun_requests::by_id(&mut tx, id).await.unwrap().unwrap().status.to_string()
    }

    async fn audit_after(&self, action: &str) -> Vec<String> {
        let mut tx = self.app.db().begin_read().await.unwrap();
        let events = backend::db::audit::page_after(&mut tx, 0, 100_000).await.unwrap();
        events.into_iter().filter(|e| e.action == action).filter_map(|e| e.after_json).collect()
    }
}

fn refused(answer: &Result<impl std::fmt::Debug, AppError>) -> bool {
    matches!(answer, Err(AppError::Forbidden | AppError::NotFound))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_manager_who_requested_a_bulk_rerun_cannot_approve_it() {
    let g = gate(1).await;
    let id = g.bulk_requested_by(&["ORD-B1", "ORD-B2"], "suzuki").await;
    let own = batches::decide(&g.app.state, &g.who("suzuki").await, &id, true, "").await;
    assert!(matches!(own, Err(AppError::Forbidden)), "the requester of the members approved: {own:?}");
    assert_eq!(g.batch_status(&id).await, "pending_approval");
    assert_eq!(g.dispatches("ORD-B1").await + g.dispatches("ORD-B2").await, 0);
    batches::decide(&g.app.state, &g.who("takahashi").await, &id, true, "").await.unwrap();
    assert_eq!(g.batch_status(&id).await, "dispatching", "another owner approves it");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_two_of_two_the_requester_of_a_bulk_rerun_is_not_one_of_the_two() {
    let g = gate(2).await;
    let id = g.bulk_requested_by(&["ORD-N1"], "suzuki").await;
    batches::decide(&g.app.state, &g.who("takahashi").await, &id, true, "").await.unwrap();
    let own = batches::decide(&g.app.state, &g.who("suzuki").await, &id, true, "").await;
    assert!(matches!(own, Err(AppError::Forbidden)), "{own:?}");
    assert_eq!(g.batch_status(&id).await, "pending_approval", "one of two: the requester does not count");
    assert_eq!(g.dispatches("ORD-N1").await, 0);
    batches::decide(&g.app.state, &g.who("yamada").await, &id, true, "").await.unwrap();
    assert_eq!(g.batch_status(&id).await, "dispatching");
    assert_eq!(g.dispatches("ORD-N1").await, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_single_request_approved_by_a_manager_who_decided_on_it_before_does_not_count_twice() {
    let g = gate(2).await;
    let id = submitted_for(&g, "ORD-S1").await;
    decide(&g.app.state, &g.who("takahashi").await, &id, Decision::Approve, "").await.unwrap();
    let again = decide(&g.app.state, &g.who("takahashi").await, &id, Decision::Approve, "").await;
    assert!(again.is_err(), "{again:?}");
    assert_eq!(g.request_status(&id).await, "pending_approval");
}

async fn submitted_for(g: &Gate, process_id: &str) -> String {
    stalled(&g.app, &g.token, process_id).await;
    submitted(&g.app, &g.who("sato").await, process_id).await
}

/// A billing invoice run whose mail step failed, stalled by the sweeper.
async fn stalled_invoice(app: &TestApp, token: &str, process_id: &str) {
    let body = json!({"process_id": process_id, "workflow": "monthly-billing", "department": "billing",
        "steps": [{"name": "draft_invoice", "idempotency_key": format!("{process_id}-d")},
                  {"name": "send_mail", "idempotency_key": format!("{process_id}-m")},
                  {"name": "issue_invoice", "idempotency_key": format!("{process_id}-i")}]});
    app.api(Method::POST, "/api/v1/operations", token, Some(process_id), Some(&body)).await;
    let done = json!({"seq": 1, "type": "succeeded", "result_id": "draft-1"});
    app.api(
        Method::POST,
        &format!("/api/v1/operations/{process_id}/steps/draft_invoice/events"),
        token,
        None,
        Some(&done),
    )
    .await;
    let failed = json!({"seq": 1, "type": "failed", "error": {"class": "server_error", "message": "503"}});
    app.api(
        Method::POST,
        &format!("/api/v1/operations/{process_id}/steps/send_mail/events"),
        token,
        None,
        Some(&failed),
    )
    .await;
    app.clock.advance(Duration::minutes(5));
    backend::services::sweeper::sweep(&app.state).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_auditor_who_is_staff_or_manager_of_sales_changes_nothing_of_billing() {
    let g = gate(1).await;
    let app = &g.app;
    app.user("ito", &["staff"], &["billing"]).await;
    app.user("mix", &["auditor", "staff"], &["sales"]).await;
    app.user("boss", &["auditor", "manager"], &["sales"]).await;
    let (ito, mix, boss) = (g.who("ito").await, g.who("mix").await, g.who("boss").await);
    stalled_invoice(app, &g.token, "INV-H").await;
    stalled_invoice(app, &g.token, "INV-S").await;
    holds::place(&app.state, &ito, "INV-H", "請求先に確認中").await.unwrap();
    let before = app.audit_actions().await.len();

    let s = &app.state;
    assert!(refused(&holds::release(s, &mix, "INV-H", "確認した").await), "release");
    assert!(refused(&holds::place(s, &mix, "INV-S", "止める").await), "hold");
    assert!(refused(&reconciliation::on_demand(s, &mix, "INV-S").await), "reconcile");
    assert!(refused(&rerun_requests::start(s, &mix, "INV-S", "再実行する").await), "rerun request");
    let manual =
        holds::manual_verdict(s, &boss, "INV-S", "send_mail", Verdict::NotExecuted, "サポートが未送信と回答").await;
    assert!(refused(&manual), "manual verdict: {manual:?}");
    let form = incidents::TextsForm {
        title: "請求メールの停止".into(),
        occurred_at: "2026-11-29T09:00".into(),
        impact: "二重請求のおそれ".into(),
        cause: "メール事業者の障害".into(),
        response: "確認中".into(),
    };
    assert!(refused(&incidents::file(s, &mix, "INV-S", form).await), "incident");
    let pause = stop_switch::pause(s, &boss, Scope::Workflow, "monthly-billing", "止める").await;
    assert!(refused(&pause), "stop switch: {pause:?}");

    // The same over HTTP, as the pages call it.
    let cookie = app.sign_in("mix", crate::harness::PASSWORD).await;
    for endpoint in ["board/release", "board/hold", "board/reconcile"] {
        let process_id = if endpoint == "board/release" { "INV-H" } else { "INV-S" };
        let answer = app.call(endpoint, &[("process_id", process_id), ("reason", "試す")], Some(&cookie)).await;
        assert!(
            matches!(answer.status, StatusCode::FORBIDDEN | StatusCode::NOT_FOUND),
            "{endpoint}: {} {}",
            answer.status,
            answer.body
        );
    }
    let actions = app.audit_actions().await;
    let changed: Vec<&String> = actions[before..].iter().filter(|a| !a.starts_with("sign_in.")).collect();
    assert!(changed.is_empty(), "nothing of billing changed: {changed:?}");
}

/// A sales order approved while the stop switch holds its workflow: something changes while it waits.
async fn approved_while_paused(g: &Gate, process_id: &str) -> String {
    let owner = g.who("suzuki").await;
    stop_switch::pause(&g.app.state, &owner, Scope::Workflow, "order-intake", "受注システムの点検").await.unwrap();
    let id = approved_request(&g.app, &g.token, &g.who("sato").await, &owner, process_id).await;
    g.dispatch_a_minute().await;
    assert!(g.receiver.requests().is_empty(), "held while paused");
    id
}

async fn resumed(g: &Gate) {
    stop_switch::resume(&g.app.state, &g.who("suzuki").await, Scope::Workflow, "order-intake", "点検が終わった")
        .await
        .unwrap();
    g.dispatch_a_minute().await;
}

/// Nothing was sent, the request went back to staff, and the voiding audit event says what changed.
async fn voided_with(g: &Gate, id: &str, changed: &str) {
    assert!(g.receiver.requests().is_empty(), "the rerun was sent after its plan changed");
    assert_eq!(g.request_status(id).await, "cancelled");
    let voided = g.audit_after("rerun_request.voided").await;
    assert!(voided.iter().any(|a| a.contains(id) && a.contains(changed)), "what changed is audited: {voided:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_step_whose_completion_flag_was_set_while_the_rerun_waited_is_not_sent() {
    let g = gate(1).await;
    let id = approved_while_paused(&g, "ORD-F1").await;
    // The integration reports the summary done before the AI service's own log shows it.
    let done = json!({"seq": 1, "type": "succeeded", "result_id": "resp_f1"});
    let answer =
        g.app.api(Method::POST, "/api/v1/operations/ORD-F1/steps/ai_summary/events", &g.token, None, Some(&done)).await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
    resumed(&g).await;
    voided_with(&g, &id, "ai_summary").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_step_whose_verdict_was_changed_by_hand_while_the_rerun_waited_is_not_sent() {
    let g = gate(1).await;
    let id = approved_while_paused(&g, "ORD-F2").await;
    let owner = g.who("takahashi").await;
    holds::manual_verdict(&g.app.state, &owner, "ORD-F2", "ai_summary", Verdict::Unknown, "AI 事業者が調査中")
        .await
        .unwrap();
    resumed(&g).await;
    voided_with(&g, &id, "ai_summary").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rerun_whose_workflow_definition_changed_while_it_waited_is_not_sent() {
    let g = gate(1).await;
    let id = approved_while_paused(&g, "ORD-F3").await;
    stop_switch::resume(&g.app.state, &g.who("suzuki").await, Scope::Workflow, "order-intake", "点検が終わった")
        .await
        .unwrap();
    // The instance restarts with a changed definition of the workflow (another step order, URL or owners).
    let mut changed = (*g.app.state.config).clone();
    changed.workflows.iter_mut().for_each(|w| w.version = format!("{}-changed", w.version));
    let kinds = server::startup::connector_kinds();
    let restarted =
        backend::AppState::new(g.app.db().clone(), g.app.clock.clone(), (*g.app.state.server).clone(), changed, &kinds)
            .unwrap();
    g.app.clock.advance(Duration::seconds(10));
    while dispatch_due(&restarted).await.unwrap() > 0 {}
    voided_with(&g, &id, "workflow_version").await;
}

/// The example configuration with a workflow of billing that calls sales' AI service too (step `ai_summary`): an
/// outside system both departments call, so that a pause of it concerns both.
fn with_billing_summary() -> backend::config::Config {
    let mut config = crate::harness::example_config();
    let mut shared = config.workflows.iter().find(|w| w.name == "monthly-billing").unwrap().clone();
    shared.name = "billing-summary".into();
    shared.steps.truncate(1);
    shared.steps[0].name = "ai_summary".into();
    shared.steps[0].connector = Some("ai-summary".into());
    config.workflows.push(shared);
    config
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pause_is_resumed_by_the_department_that_set_it_or_an_admin() {
    let app = TestApp::spawn_configured(|_| {}, with_billing_summary()).await;
    app.user("suzuki", &["manager"], &["sales"]).await;
    app.user("ito", &["manager"], &["billing"]).await;
    app.user("root", &["admin"], &[]).await;
    let (suzuki, ito, root) = (caller(&app, "suzuki").await, caller(&app, "ito").await, caller(&app, "root").await);
    stop_switch::pause(&app.state, &suzuki, Scope::Connector, "ai-summary", "AI の API が制限中").await.unwrap();
    let other = stop_switch::resume(&app.state, &ito, Scope::Connector, "ai-summary", "解除してよいはず").await;
    assert!(matches!(other, Err(AppError::Forbidden)), "another department's owner resumed sales' pause: {other:?}");
    let billing_board = backend::services::board::stalled(&app.state, &ito, Default::default()).await.unwrap();
    assert_eq!(billing_board.pauses.len(), 1, "the pause concerns billing too: its board shows it");
    stop_switch::resume(&app.state, &suzuki, Scope::Connector, "ai-summary", "制限が解除された").await.unwrap();
    stop_switch::pause(&app.state, &suzuki, Scope::Connector, "ai-summary", "また制限").await.unwrap();
    stop_switch::resume(&app.state, &root, Scope::Connector, "ai-summary", "管理者が解除").await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_step_cannot_take_another_steps_idempotency_key_at_the_same_outside_system() {
    let app = TestApp::spawn_configured(|_| {}, with_billing_summary()).await;
    let sales = app.token("sales-intake", &["sales"]).await;
    let billing = app.token("billing-intake", &["billing"]).await;
    let order = json!({"process_id": "ORD-K", "workflow": "order-intake", "department": "sales",
        "steps": [{"name": "register_order", "idempotency_key": "ORD-K-r"}, {"name": "ai_summary", "idempotency_key": "ORD-K-s"}]});
    assert_eq!(
        app.api(Method::POST, "/api/v1/operations", &sales, Some("ORD-K"), Some(&order)).await.status,
        StatusCode::CREATED
    );
    // Billing's token registers a step under sales' key at the same AI service, to catch its webhooks.
    let capture = json!({"process_id": "BIL-K", "workflow": "billing-summary", "department": "billing",
        "steps": [{"name": "ai_summary", "idempotency_key": "ORD-K-s"}]});
    let answer = app.api(Method::POST, "/api/v1/operations", &billing, Some("BIL-K"), Some(&capture)).await;
    assert_eq!(answer.status, StatusCode::CONFLICT, "{}", answer.body);
    assert!(answer.json()["type"].as_str().unwrap().ends_with("idempotency-key-taken"), "{}", answer.body);

    let payload = json!({"type": "execution.updated", "timestamp": "2026-11-30T00:00:00Z", "data": {
        "id": "resp_k", "idempotency_key": "ORD-K-s", "status": "completed", "created_at": "2026-11-30T00:00:00Z", "version": 1}})
    .to_string();
    let sent = crate::webhooks::send(&app, "msg_k", &payload, crate::harness::WEBHOOK_SECRET_NEW, 0).await;
    assert_eq!(sent.status, StatusCode::OK, "{}", sent.body);
    let step = app.api(Method::GET, "/api/v1/operations/ORD-K", &sales, None, None).await.json()["steps"][1].clone();
    // Registered without content: done, compared with nothing.
    assert_eq!(step["latest_verdict"], "executed_not_compared", "the webhook reached sales' own step: {step}");
}
