//! Bulk reruns in stages (issue 66): a canary first, then wider stages; a stage passes only when every rerun of
//! it was reported done and the outside systems, asked again after the settle time, show each re-run step
//! executed with its content. A failed stage stops the batch, trips the workflow's stop switch and tells the
//! owners; only a manager who made none of it resumes it; stages changed after the approval void the batch.
use crate::batches::{Bulk, bulk_with, by_filter, ids};
use crate::fixtures::caller;
use backend::demo::systems::Service;
use backend::services::{batches, stop_switch, sweeper};
use chrono::Duration;
use contract::AppError;
use contract::batches::{BatchView, Control};
use domain::canary::{CanaryConfig, StageFailure, StageOutcome};
use reqwest::Method;
use serde_json::json;

const SETTLE: u32 = 30;

/// A canary of 3, then half, then the rest; the outside systems are asked again 30 s after a stage reported.
fn staged() -> CanaryConfig {
    CanaryConfig { stages: vec![50, 100], settle_seconds: SETTLE, ..CanaryConfig::default() }
}

async fn staged_bulk() -> Bulk {
    bulk_with(|config| config.workflows.iter_mut().for_each(|w| w.canary = Some(staged()))).await
}

fn amount(process_id: &str) -> i64 {
    1000 + process_id.bytes().map(i64::from).sum::<i64>()
}

/// Order intakes with their content (item and amount) whose first step failed with a 503.
async fn stalled_orders(b: &Bulk, process_ids: &[String]) {
    for process_id in process_ids {
        let content = json!({"item": "デスク", "amount": amount(process_id)});
        let body = json!({"process_id": process_id, "workflow": "order-intake", "department": "sales",
            "steps": [{"name": "register_order", "idempotency_key": format!("{process_id}-r"), "content": content},
                      {"name": "ai_summary", "idempotency_key": format!("{process_id}-s"), "content": content}]});
        b.app.api(Method::POST, "/api/v1/operations", &b.token, Some(process_id), Some(&body)).await;
        let failed = json!({"seq": 1, "type": "failed", "error": {"class": "server_error", "message": "503"}});
        b.report(process_id, "register_order", failed).await;
    }
    b.app.clock.advance(Duration::minutes(5));
    sweeper::sweep(&b.app.state).await.unwrap();
}

/// The integration performs a rerun it received: the order system stores `stored` as the amount, the AI
/// summarises, and both steps are reported done.
async fn performs(b: &Bulk, process_id: &str, stored: i64) {
    let systems = b.app.demo_systems();
    let order = json!({"item": "デスク", "amount": stored});
    systems.execute(Service::Orders, &format!("{process_id}-r"), &order, Some(process_id)).await.unwrap();
    let summary = json!({"item": "デスク", "amount": amount(process_id)});
    systems.execute(Service::Ai, &format!("{process_id}-s"), &summary, Some(process_id)).await.unwrap();
    for (step, first) in [("register_order", 2), ("ai_summary", 1)] {
        b.report(process_id, step, json!({"seq": first, "type": "started"})).await;
        b.report(process_id, step, json!({"seq": first + 1, "type": "succeeded"})).await;
    }
}

/// Every rerun sent so far and not performed yet is performed faithfully.
async fn performs_what_was_sent(b: &Bulk, performed: &mut Vec<String>) {
    for process_id in b.sent() {
        if !performed.contains(&process_id) {
            performs(b, &process_id, amount(&process_id)).await;
            performed.push(process_id);
        }
    }
}

/// Time for the AI to finish and the stage to settle, with the sweeper's rounds in between.
async fn settles(b: &Bulk) {
    sweeper::sweep(&b.app.state).await.unwrap(); // every rerun reported: the settle time starts
    b.app.clock.advance(Duration::seconds(i64::from(SETTLE) + 1));
    sweeper::sweep(&b.app.state).await.unwrap();
}

fn stage(view: &BatchView, number: usize) -> contract::batches::StageView {
    view.stages.as_ref().expect("a batch in stages").stages[number - 1].clone()
}

/// Ten orders requested in stages at one a second and approved; the canary goes out.
async fn approved_in_stages(b: &Bulk, prefix: &str) -> String {
    let all = ids(prefix, 10);
    stalled_orders(b, &all).await;
    let id = b.previewed(by_filter()).await;
    let previewed = b.view(&id).await;
    let planned: Vec<usize> = previewed.stages.as_ref().unwrap().stages.iter().map(|s| s.operations).collect();
    assert_eq!(planned, vec![3, 2, 5], "the preview shows the stages: a canary of 3, to half, then the rest");
    b.approved(&id, 60).await;
    b.dispatch_for(10).await;
    assert_eq!(b.sent().len(), 3, "only the canary goes out");
    id
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_healthy_canary_widens_stage_by_stage_to_all() {
    let b = staged_bulk().await;
    let id = approved_in_stages(&b, "HLT").await;
    let mut performed = Vec::new();
    performs_what_was_sent(&b, &mut performed).await;
    sweeper::sweep(&b.app.state).await.unwrap();
    b.dispatch_for(10).await;
    assert_eq!(b.sent().len(), 3, "nothing more before the outside systems were asked again");
    b.app.clock.advance(Duration::seconds(20)); // the AI finishes its summaries
    settles(&b).await;
    let view = b.view(&id).await;
    assert_eq!(stage(&view, 1).outcome, Some(StageOutcome::Passed));
    assert_eq!((stage(&view, 1).reported, stage(&view, 1).verified), (3, 3));

    b.dispatch_for(10).await;
    assert_eq!(b.sent().len(), 5, "the second stage: up to half");
    performs_what_was_sent(&b, &mut performed).await;
    b.app.clock.advance(Duration::seconds(20));
    settles(&b).await;
    b.dispatch_for(10).await;
    assert_eq!(b.sent().len(), 10, "the last stage: the rest");
    performs_what_was_sent(&b, &mut performed).await;
    b.app.clock.advance(Duration::seconds(20));
    sweeper::sweep(&b.app.state).await.unwrap();

    let view = b.view(&id).await;
    assert_eq!(view.status.as_str(), "completed");
    let outcomes: Vec<Option<StageOutcome>> = view.stages.unwrap().stages.iter().map(|s| s.outcome).collect();
    assert_eq!(
        outcomes,
        vec![Some(StageOutcome::Passed), Some(StageOutcome::Passed), None],
        "the rest waits on no verdict"
    );
    let actions = b.app.audit_actions().await;
    let count = |a: &str| actions.iter().filter(|x| *x == a).count();
    assert_eq!((count("rerun_batch.stage_started"), count("rerun_batch.stage_passed")), (3, 2));
    assert!(stop_switch::stopped(&b.app.state).await.unwrap().is_empty());
}

/// The canary's first rerun meets an order system that stores another amount.
async fn stopped_after_the_canary(b: &Bulk) -> String {
    let id = approved_in_stages(b, "MIS").await;
    let sent = b.sent();
    performs(b, &sent[0], amount(&sent[0]) + 500).await;
    for process_id in &sent[1..] {
        performs(b, process_id, amount(process_id)).await;
    }
    b.app.clock.advance(Duration::seconds(20));
    settles(b).await;
    id
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_canary_whose_outside_system_stores_another_amount_stops_the_batch_trips_the_switch_and_tells_the_owners() {
    let b = staged_bulk().await;
    let id = stopped_after_the_canary(&b).await;
    let first = b.sent()[0].clone();

    let view = b.view(&id).await;
    assert_eq!(view.status.as_str(), "paused");
    let canary = stage(&view, 1);
    assert_eq!(canary.outcome, Some(StageOutcome::Failed));
    assert_eq!(canary.failures, vec![(first.clone(), StageFailure::ContentMismatch)]);
    assert_eq!((canary.verified, canary.failed), (2, 1));
    assert!(view.stages.as_ref().unwrap().awaits_decision);
    b.dispatch_for(60).await;
    assert_eq!(b.sent().len(), 3, "nothing after the canary");

    let stopped = stop_switch::stopped(&b.app.state).await.unwrap();
    assert_eq!(stopped.iter().map(|s| s.name.as_str()).collect::<Vec<_>>(), vec!["order-intake"]);
    let heard = backend::services::notifications::latest(&b.app.state, &b.owner).await.unwrap();
    assert!(heard.iter().any(|n| n.kind == "stage_failed" && n.link == format!("/batches/{id}")), "{heard:?}");
    let failed = b.app.audit_after("rerun_batch.stage_failed").await;
    assert_eq!(failed[0]["failures"][0], json!({"process_id": first, "failure": "content_mismatch"}));
    assert_eq!(b.app.audit_after("dispatch.paused").await.len(), 1, "the switch's trip is in the trail");
    let mut tx = b.app.db().begin_read().await.unwrap();
    let banner = stop_switch::open(&b.app.state, &mut tx, &b.owner).await.unwrap();
    assert_eq!(
        banner[0].reason, "段階 1 が外部システムで確認できませんでした",
        "the system's reason in the reader's words"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_a_manager_who_made_none_of_it_resumes_after_a_failed_stage_and_says_why() {
    let b = staged_bulk().await;
    let id = stopped_after_the_canary(&b).await;
    assert!(!b.view(&id).await.may_resume, "the batch's maker may not resume it");
    let by_maker = batches::control(&b.app.state, &b.staff, &id, Control::Resume, "問題ないはず").await;
    assert!(matches!(by_maker, Err(AppError::Forbidden)), "{by_maker:?}");
    // A manager of the department whose sign-in is no longer fresh signs in again first.
    b.app.user("tanaka", &["manager"], &["sales"]).await;
    let stale = caller(&b.app, "tanaka").await;
    b.app.clock.advance(Duration::hours(1));
    let refused = batches::control(&b.app.state, &stale, &id, Control::Resume, "確認した").await;
    assert!(matches!(refused, Err(AppError::SignInAgain)), "{refused:?}");

    let owner = caller(&b.app, "suzuki").await;
    batches::control(&b.app.state, &owner, &id, Control::Resume, "金額の差は手入力の誤りと確認した").await.unwrap();
    let view = b.view(&id).await;
    assert_eq!(view.status.as_str(), "dispatching");
    let canary = stage(&view, 1);
    assert_eq!(canary.resumed_by.as_deref(), Some("suzuki san"));
    assert_eq!(canary.resume_reason.as_deref(), Some("金額の差は手入力の誤りと確認した"));
    assert!(stage(&view, 2).started_at.is_some(), "the next stage opened");
    let resumed = b.app.audit_after("rerun_batch.stage_resumed").await;
    assert_eq!(resumed.len(), 1);
    let history: Vec<&str> = view.history.iter().map(|e| e.action.as_str()).collect();
    let told = ["rerun_batch.stage_started", "rerun_batch.stage_resumed", "rerun_batch.stage_failed"];
    assert_eq!(history[..3], told, "the page's history, newest first: who resumed, after which verdict");
}

/// Finding 9 of the hardening round: one owner resumed, alone, a batch whose approval took two, sending the rest
/// of it. Going on after a failed stage now takes the batch's own quorum: as many managers as the approval, each
/// with a reason and a fresh sign-in, none a maker, each once; until then it stays stopped, and the page says
/// who decided so far.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_approved_by_two_goes_on_after_a_failed_stage_only_when_two_managers_decide_so() {
    let b = bulk_with(|config| {
        config.workflows.iter_mut().for_each(|w| {
            w.canary = Some(staged());
            w.approvals_required = 2;
        })
    })
    .await;
    b.app.user("tanaka", &["manager"], &["sales"]).await;
    let all = ids("TWO", 10);
    stalled_orders(&b, &all).await;
    let id = b.previewed(by_filter()).await;
    batches::request(&b.app.state, &b.staff, &id, Some(60)).await.unwrap();
    b.checked_and_submitted(&id).await;
    batches::decide(&b.app.state, &b.owner, &id, true, "").await.unwrap();
    batches::decide(&b.app.state, &caller(&b.app, "tanaka").await, &id, true, "").await.unwrap();
    b.dispatch_for(10).await;
    let sent = b.sent();
    performs(&b, &sent[0], amount(&sent[0]) + 500).await;
    for process_id in &sent[1..] {
        performs(&b, process_id, amount(process_id)).await;
    }
    b.app.clock.advance(Duration::seconds(20));
    settles(&b).await;
    assert_eq!(b.view(&id).await.status.as_str(), "paused");

    let suzuki = caller(&b.app, "suzuki").await;
    batches::control(&b.app.state, &suzuki, &id, Control::Resume, "金額の差は手入力の誤り").await.unwrap();
    let view = b.view(&id).await;
    assert_eq!(view.status.as_str(), "paused", "one decision of two: it stays stopped");
    let stages = view.stages.as_ref().unwrap();
    assert_eq!((stages.resume_decisions.clone(), stages.resume_required), (vec!["suzuki san".to_string()], 2));
    assert!(!view.may_resume, "he decided already");
    let again = batches::control(&b.app.state, &suzuki, &id, Control::Resume, "もう一度").await;
    assert!(matches!(again, Err(AppError::Conflict { .. })), "one person counts once: {again:?}");
    let by_maker = batches::control(&b.app.state, &b.staff, &id, Control::Resume, "問題ないはず").await;
    assert!(matches!(by_maker, Err(AppError::Forbidden)), "{by_maker:?}");
    b.dispatch_for(60).await;
    assert_eq!(b.sent().len(), 3, "nothing more is sent on one decision");

    let tanaka = caller(&b.app, "tanaka").await;
    batches::control(&b.app.state, &tanaka, &id, Control::Resume, "記録を確認した").await.unwrap();
    assert_eq!(b.view(&id).await.status.as_str(), "dispatching", "the second decision makes the quorum");
    assert_eq!(b.app.audit_after("rerun_batch.stage_resume_recorded").await.len(), 1);
    assert_eq!(b.app.audit_after("rerun_batch.stage_resumed").await.len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_canary_whose_integration_never_reports_fails_at_the_deadline() {
    let b = staged_bulk().await;
    let id = approved_in_stages(&b, "SIL").await;
    b.app.clock.advance(Duration::seconds(60));
    sweeper::sweep(&b.app.state).await.unwrap();
    assert_eq!(b.view(&id).await.status.as_str(), "dispatching", "within the deadline it waits");
    // The workflow's longest deadline of a re-run step is the AI summary's, 900 s.
    b.app.clock.advance(Duration::seconds(900));
    sweeper::sweep(&b.app.state).await.unwrap();
    let view = b.view(&id).await;
    assert_eq!(view.status.as_str(), "paused");
    let failures = stage(&view, 1).failures;
    assert_eq!(failures.len(), 3);
    assert!(failures.iter().all(|(_, why)| *why == StageFailure::NoReport), "{failures:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bulk_rerun_whose_stages_changed_after_its_approval_is_voided_before_its_next_stage() {
    let b = staged_bulk().await;
    let id = approved_in_stages(&b, "CHS").await;
    let mut performed = Vec::new();
    performs_what_was_sent(&b, &mut performed).await;
    b.app.clock.advance(Duration::seconds(20));
    sweeper::sweep(&b.app.state).await.unwrap();
    let restarted = with_a_wider_canary(&b);
    b.app.clock.advance(Duration::seconds(i64::from(SETTLE) + 1));
    sweeper::sweep(&restarted).await.unwrap();
    let view = b.view(&id).await;
    assert_eq!(view.status.as_str(), "cancelled");
    b.dispatch_for(30).await;
    assert_eq!(b.sent().len(), 3, "nothing of the next stages went out");
    let cancelled = b.app.audit_actions().await.iter().filter(|a| *a == "rerun_request.cancelled").count();
    assert_eq!(cancelled, 7, "each member that waited for its stage was withdrawn");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stage_whose_outside_system_is_still_working_waits_and_is_asked_again() {
    let b = staged_bulk().await;
    let id = approved_in_stages(&b, "WRK").await;
    // The integration reports the summaries done before the AI service has finished them.
    let systems = b.app.demo_systems();
    for process_id in b.sent() {
        let order = json!({"item": "デスク", "amount": amount(&process_id)});
        systems.execute(Service::Orders, &format!("{process_id}-r"), &order, Some(&process_id)).await.unwrap();
        for (step, first) in [("register_order", 2), ("ai_summary", 1)] {
            b.report(&process_id, step, json!({"seq": first, "type": "started"})).await;
            b.report(&process_id, step, json!({"seq": first + 1, "type": "succeeded"})).await;
        }
    }
    sweeper::sweep(&b.app.state).await.unwrap();
    b.app.clock.advance(Duration::seconds(i64::from(SETTLE) - 5));
    for process_id in b.sent() {
        let summary = json!({"item": "デスク", "amount": amount(&process_id)});
        systems.execute(Service::Ai, &format!("{process_id}-s"), &summary, Some(&process_id)).await.unwrap();
    }
    b.app.clock.advance(Duration::seconds(6)); // settled, but the AI works for 20 s
    sweeper::sweep(&b.app.state).await.unwrap();
    let view = b.view(&id).await;
    assert_eq!((view.status.as_str(), stage(&view, 1).outcome), ("dispatching", None), "in progress: it waits");
    assert_eq!(stage(&view, 1).verified, 0);
    b.app.clock.advance(Duration::seconds(20));
    sweeper::sweep(&b.app.state).await.unwrap();
    let view = b.view(&id).await;
    assert_eq!(stage(&view, 1).outcome, Some(StageOutcome::Passed), "asked again once the AI finished");
    assert_eq!(stage(&view, 1).verified, 3);
}

/// The same instance started again with a wider canary configured.
fn with_a_wider_canary(b: &Bulk) -> backend::AppState {
    let mut changed = (*b.app.state.config).clone();
    changed.workflows.iter_mut().for_each(|w| w.canary = Some(CanaryConfig { size: 10, ..staged() }));
    let kinds = server::startup::connector_kinds();
    let (db, clock, server) = (b.app.db().clone(), b.app.clock.clone(), (*b.app.state.server).clone());
    backend::AppState::new(db, clock, server, changed, &kinds).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bulk_rerun_whose_stages_changed_before_its_approval_cannot_be_approved_and_ends() {
    let b = staged_bulk().await;
    stalled_orders(&b, &ids("PRE", 10)).await;
    let id = b.previewed(by_filter()).await;
    batches::request(&b.app.state, &b.staff, &id, Some(60)).await.unwrap();
    b.checked_and_submitted(&id).await;
    let restarted = with_a_wider_canary(&b);
    let refused = batches::decide(&restarted, &b.owner, &id, true, "").await;
    assert!(matches!(refused, Err(AppError::Conflict { problem: contract::Conflict::PlanChanged, .. })), "{refused:?}");
    assert_eq!(b.view(&id).await.status.as_str(), "cancelled");
    b.dispatch_for(10).await;
    assert!(b.sent().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_canary_rerun_reported_failed_stops_the_batch_at_once_without_waiting_for_the_others() {
    let b = staged_bulk().await;
    let id = approved_in_stages(&b, "FLD").await;
    let (first, second) = (b.sent()[0].clone(), b.sent()[1].clone());
    b.report(&first, "register_order", json!({"seq": 2, "type": "started"})).await;
    let failed = json!({"seq": 3, "type": "failed", "error": {"class": "server_error", "message": "503"}});
    b.report(&first, "register_order", failed).await;
    // The second has only started again: the 503 it answers still stands on its step, and fails nothing.
    b.report(&second, "register_order", json!({"seq": 2, "type": "started"})).await;
    batches::check_stages(&b.app.state).await.unwrap(); // the stage check, before any sweep stalls it
    let view = b.view(&id).await;
    assert_eq!(view.status.as_str(), "paused");
    assert_eq!(stage(&view, 1).failures, vec![(first, StageFailure::RerunFailed)]);
}
