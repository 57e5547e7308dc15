//! Drills: refused on a database not marked as a demo or drill environment; each injected fault stalls its
//! practice operation with the matching event and acts on the demo outside systems for its period; drill
//! operations never count in the real indicators; the report reads the decisions from the audit trail.
use crate::fixtures::caller;
use crate::harness::TestApp;
use backend::demo::systems::Service;
use backend::services::dispatcher::dispatch_due;
use backend::services::{Caller, batches, drills, holds, rerun_requests};
use chrono::Duration;
use contract::AppError;
use domain::drills::Fault;
use serde_json::json;

/// The demo loaded (which marks the database), with its admin and staff as callers.
async fn demo() -> (TestApp, Caller, Caller) {
    let app = TestApp::spawn().await;
    app.clock.advance(Duration::hours(2));
    backend::demo::load_if_empty(&app.state).await.unwrap().unwrap();
    let (admin, sato) = (caller(&app, "admin").await, caller(&app, "sato").await);
    (app, admin, sato)
}

async fn status_and_event(app: &TestApp, process_id: &str) -> (String, Option<String>) {
    let mut tx = app.db().begin_read().await.unwrap();
    let op = backend::db::operations::by_process_id(&mut tx, process_id).await.unwrap().unwrap();
    (op.status.to_string(), op.event)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_drill_is_refused_on_a_database_not_marked_as_demo_or_drill() {
    let app = TestApp::spawn().await;
    app.user("root", &["admin"], &[]).await;
    let root = caller(&app, "root").await;
    let refused = drills::start(&app.state, &root, &[Fault::AnswerLost], 30, "朝の訓練").await;
    assert!(
        matches!(refused, Err(AppError::Conflict { ref problem, .. }) if *problem == contract::Conflict::NotADrillDatabase),
        "{refused:?}"
    );
    assert!(!app.audit_actions().await.contains(&"drill.started".to_string()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_injected_fault_stalls_its_practice_operation_with_the_matching_event() {
    let (app, admin, sato) = demo().await;
    let staff_may_not = drills::start(&app.state, &sato, &Fault::ALL, 30, "訓練").await;
    assert!(matches!(staff_may_not, Err(AppError::Forbidden)));
    let nothing_chosen = drills::start(&app.state, &admin, &[], 30, "訓練").await.unwrap_err();
    assert_eq!(app::ui::error_in(words::i18n::Locale::ja, &nothing_chosen), "起こす障害: 一つ以上選んでください");
    let id = drills::start(&app.state, &admin, &Fault::ALL, 30, "認証切れと応答喪失の朝").await.unwrap();

    let report = drills::report(&app.state, &admin, &id).await.unwrap();
    assert_eq!(report.lines.len(), 8 + 2 * 20, "one operation for each fault; twenty for each canary fault");
    for line in &report.lines {
        assert_eq!(line.event, Some(line.expected_event), "{:?} stalls {}", line.fault, line.process_id);
        let (status, event) = status_and_event(&app, &line.process_id).await;
        assert_eq!((status.as_str(), event.as_deref()), ("stalled", Some(line.expected_event.as_str())));
    }
    assert!(
        drills::start(&app.state, &admin, &[Fault::AnswerLost], 30, "二つ目").await.is_err(),
        "one drill at a time"
    );

    // For its period each fault acts on its own practice operation, and on nothing else of the demo.
    let practice = |fault: Fault| report.lines.iter().find(|l| l.fault == fault).unwrap().process_id.clone();
    let (expired, limited) = (practice(Fault::CredentialsExpired), practice(Fault::RateLimited));
    let systems = app.demo_systems();
    let refused = systems.execute(Service::Orders, "P-1-r", &json!({}), Some(&expired)).await;
    assert!(matches!(refused, Err(AppError::Unauthorized)), "credentials expired: {:?}", refused.as_ref().err());
    let slowed = systems.execute(Service::Ai, "P-1-s", &json!({}), Some(&limited)).await;
    assert!(matches!(slowed, Err(AppError::TooManyRequests { .. })), "rate limited: {:?}", slowed.as_ref().err());
    let ordinary = systems.execute(Service::Orders, "ORD-9-r", &json!({}), Some("ORD-9")).await;
    assert!(ordinary.is_ok(), "an ordinary operation of the demo meets no fault: {:?}", ordinary.err());
    assert!(systems.execute(Service::Ai, "ORD-9-s", &json!({}), Some("ORD-9")).await.is_ok());
    app.clock.advance(Duration::minutes(31));
    assert!(systems.execute(Service::Orders, "P-2-r", &json!({}), Some(&expired)).await.is_ok(), "the drill is over");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drill_operations_are_marked_and_never_count_in_the_real_indicators() {
    let (app, admin, _) = demo().await;
    let review = |app: &TestApp| {
        let state = app.state.clone();
        async move {
            let now = backend::Clock::now(state.clock.as_ref());
            let mut tx = state.db.begin_read().await.unwrap();
            let tallies =
                backend::db::reviews::tallies(&mut tx, now - Duration::days(7), now + Duration::days(1), None);
            domain::indicators::Counts::of(tallies.await.unwrap())
        }
    };
    let before = review(&app).await;
    let id = drills::start(&app.state, &admin, &Fault::ALL, 30, "訓練").await.unwrap();
    let after = review(&app).await;
    assert_eq!(after.stalled_by_event, before.stalled_by_event, "the drill's stalls are not real stalls");
    assert_eq!((after.outside_calls, after.outside_errors), (before.outside_calls, before.outside_errors));

    let process_id = drills::report(&app.state, &admin, &id).await.unwrap().lines[0].process_id.clone();
    let mut tx = app.db().begin_read().await.unwrap();
    let op = backend::db::operations::by_process_id(&mut tx, &process_id).await.unwrap().unwrap();
    drop(tx);
    assert_eq!(op.drill_id.as_deref(), Some(id.as_str()), "marked with its drill");
    let sales = caller(&app, "takahashi").await;
    let board = backend::services::board::stalled(&app.state, &sales, Default::default()).await.unwrap();
    assert!(board.rows.iter().filter(|r| r.process_id.starts_with("DRILL-")).all(|r| r.drill), "the board marks them");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_report_tells_how_long_staff_took_what_they_chose_and_whether_the_table_agrees() {
    let (app, admin, sato) = demo().await;
    let id = drills::start(&app.state, &admin, &[Fault::SlowAiJob, Fault::AnswerLost], 30, "訓練").await.unwrap();
    let lines = drills::report(&app.state, &admin, &id).await.unwrap().lines;
    let slow = lines.iter().find(|l| l.fault == Fault::SlowAiJob).unwrap().process_id.clone();
    app.clock.advance(Duration::seconds(90));
    holds::place(&app.state, &sato, &slow, "AI の生成が終わるまで待つ").await.unwrap();

    let report = drills::report(&app.state, &admin, &id).await.unwrap();
    let line = report.lines.iter().find(|l| l.fault == Fault::SlowAiJob).unwrap();
    assert_eq!(line.decision, Some(domain::decision_table::Action::Hold));
    assert_eq!(line.seconds_to_decide(), Some(90));
    assert_eq!(line.matches(), Some(true), "waiting is what the table says for an AI job in progress");
    let undecided = report.lines.iter().find(|l| l.fault == Fault::AnswerLost).unwrap();
    assert_eq!((undecided.decision, undecided.matches()), (None, None));

    let csv = String::from_utf8(drills::report_csv(&app.state, &admin, &id, None).await.unwrap()).unwrap();
    let words = drills::report_csv(&app.state, &admin, &id, Some(words::i18n::Locale::ja)).await.unwrap();
    let words = String::from_utf8(words).unwrap();
    assert!(words.starts_with("注入した障害,プロセス ID,想定イベント,"), "{words}");
    assert!(words.contains("AI 処理中") || words.contains("AI処理中"), "events in words: {words}");
    assert!(csv.starts_with("fault,process_id,expected_event,event,stalled_at,decision,decided_by,decided_at,seconds_to_decide,matches_table\r\n"));
    assert!(
        csv.contains(&format!("slow_ai_job,{slow},ai_in_progress,ai_in_progress,")) && csv.contains(",hold,"),
        "{csv}"
    );
    assert!(app.audit_actions().await.contains(&"drill.report_exported".to_string()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_canary_drill_stalls_a_group_of_orders_whose_reruns_meet_another_amount_or_a_503_after_the_canary() {
    let (app, admin, _) = demo().await;
    let faults = [Fault::CanaryOtherContent, Fault::FailsAfterCanary];
    let id = drills::start(&app.state, &admin, &faults, 30, "カナリアが止まる朝").await.unwrap();
    let report = drills::report(&app.state, &admin, &id).await.unwrap();
    assert_eq!(report.lines.len(), 40, "twenty orders for each");
    assert!(report.lines.iter().all(|l| l.event == Some(domain::stall::StallEvent::TemporaryFailure)));
    let group = |fault: Fault| -> Vec<String> {
        report.lines.iter().filter(|l| l.fault == fault).map(|l| l.process_id.clone()).collect()
    };
    let systems = app.demo_systems();
    let sent = json!({"drill": id, "amount": 1000});
    let other = &group(Fault::CanaryOtherContent)[0];
    let key = format!("{other}-register_order");
    let done = systems.execute(Service::Orders, &key, &sent, Some(other)).await.unwrap();
    assert_eq!(done.execution.content["amount"], 2000, "the order system stores another amount");
    let taken: Vec<bool> = futures::future::join_all(group(Fault::FailsAfterCanary).iter().take(5).map(|p| {
        let (systems, key, sent) = (app.demo_systems(), format!("{p}-register_order"), sent.clone());
        async move { systems.execute(Service::Orders, &key, &sent, Some(p)).await.is_ok() }
    }))
    .await;
    assert_eq!(taken.iter().filter(|t| **t).count(), 3, "the first three are taken, the rest answered 503");
    let ordinary = systems.execute(Service::Orders, "ORD-9-r", &json!({"amount": 1}), Some("ORD-9")).await.unwrap();
    assert_eq!(ordinary.execution.content["amount"], 1, "nothing else of the demo meets the fault");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bulk_rerun_of_a_canary_drills_orders_stops_after_its_canary_on_the_other_amount() {
    let app = TestApp::spawn_with_demo_loop().await;
    app.clock.advance(Duration::hours(2));
    backend::demo::load_if_empty(&app.state).await.unwrap().unwrap();
    let (admin, sato, suzuki) = (caller(&app, "admin").await, caller(&app, "sato").await, caller(&app, "suzuki").await);
    let id = drills::start(&app.state, &admin, &[Fault::CanaryOtherContent], 30, "カナリアの訓練").await.unwrap();
    let practice: Vec<String> =
        drills::report(&app.state, &admin, &id).await.unwrap().lines.into_iter().map(|l| l.process_id).collect();
    let selection = contract::batches::Selection { process_ids: practice, ..Default::default() };
    let batch = batches::create(&app.state, &sato, selection, "受注システムの障害の訓練").await.unwrap();
    let view = || async { batches::view(&app.state, &sato, &batch).await.unwrap() };
    while view().await.status.as_str() == "previewing" {
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    batches::request(&app.state, &sato, &batch, None).await.unwrap(); // one a second
    for n in 1..=5 {
        let cause = rerun_requests::Cause { class: Some("outside_service_outage".into()), text: Some("503".into()) };
        batches::confirm(&app.state, &sato, &batch, n, "訓練", cause).await.unwrap();
    }
    batches::submit(&app.state, &sato, &batch).await.unwrap();
    batches::decide(&app.state, &suzuki, &batch, true, "").await.unwrap();

    // The canary goes to the demo integration, which reruns it at the demo systems and reports back.
    for _ in 0..200 {
        app.clock.advance(Duration::seconds(1));
        while dispatch_due(&app.state).await.unwrap() > 0 {}
        if view().await.stages.unwrap().stages[0].reported == 3 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    batches::check_stages(&app.state).await.unwrap(); // all reported: the settle time starts
    app.clock.advance(Duration::seconds(21)); // the demo's settle time, and the AI's summaries done
    batches::check_stages(&app.state).await.unwrap();
    let stopped = view().await;
    assert_eq!(stopped.status.as_str(), "paused");
    let failures = &stopped.stages.as_ref().unwrap().stages[0].failures;
    assert_eq!(failures.len(), 3, "{failures:?}");
    assert!(failures.iter().all(|(_, why)| *why == domain::canary::StageFailure::ContentMismatch));
    let progress = stopped.progress.iter().filter(|(p, _)| *p != domain::batches::Progress::Waiting);
    assert_eq!(progress.map(|(_, n)| n).sum::<i64>(), 3, "nothing after the canary went out");
}
