//! The conformance check of a rerun endpoint (`server integration check`): a receiver that verifies and
//! deduplicates meets every expectation; a careless one that answers 200 to anything fails, with the reasons;
//! the check is in the audit trail. The client kits' receivers are checked in `client_kits.rs`.
use crate::dispatch::Receiver;
use crate::harness::TestApp;
use backend::services::conformance::{CheckOptions, check};
use domain::audit::{Actor, SystemActor};
use domain::conformance::{Heard, Probe, RerunOutcome};
use words::i18n::Locale;

fn command_line() -> Actor {
    Actor::system(SystemActor::CommandLine)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_demo_receiver_refuses_what_is_not_signed_now_and_says_a_repeat_is_a_duplicate() {
    let app = TestApp::spawn_with_demo_loop().await;
    let checked = check(&app.state, command_line(), None, "order-intake", CheckOptions::default()).await.unwrap();
    let report = words::conformance::report_in(Locale::en, &checked);
    assert!(checked.all_met(), "{report}");
    let heard: Vec<(Probe, Heard)> = checked.results.iter().map(|r| (r.probe, r.heard.clone())).collect();
    let answer = |status, outcome| Heard::Answer { status, outcome: Some(outcome) };
    assert_eq!(heard[3], (Probe::Delivered, answer(200, RerunOutcome::Test)), "a test call changes nothing");
    assert_eq!(heard[4], (Probe::Repeated, answer(200, RerunOutcome::Duplicate)));
    let events = app.audit_after("workflow.receiver_checked").await;
    assert_eq!((events.len(), &events[0]["all_met"]), (1, &serde_json::json!(true)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_receiver_that_answers_200_to_anything_fails_and_is_told_why() {
    let (receiver, url) = Receiver::start(&[]).await;
    let app = TestApp::spawn_configured(|_| {}, crate::harness::example_config()).await;
    let options = CheckOptions { url: Some(&url), ..Default::default() };
    let checked = check(&app.state, command_line(), None, "order-intake", options).await.unwrap();
    let met: Vec<(Probe, bool)> = checked.results.iter().map(|r| (r.probe, r.met)).collect();
    // A plain 200 to the valid test call too: it may have run every step (issue 62).
    assert_eq!(
        met,
        vec![
            (Probe::Unsigned, false),
            (Probe::WronglySigned, false),
            (Probe::Stale, false),
            (Probe::Delivered, false),
            (Probe::Repeated, false)
        ]
    );
    let report = words::conformance::report_in(Locale::ja, &checked);
    assert!(report.contains("✗ 署名のない呼び出しを 401 または 403 で拒否する — HTTP 200"), "{report}");
    assert!(report.contains("✗ 同じ webhook-id の再送に 2xx で応答し"), "{report}");
    assert!(report.ends_with("満たしていない期待があります\n"), "{report}");
    // Five calls, the last two under one webhook-id; none of them a real rerun.
    let requests = receiver.requests();
    let ids: Vec<&str> = requests.iter().map(|(h, _)| h["webhook-id"].to_str().unwrap()).collect();
    assert_eq!(ids.len(), 5);
    assert!(ids.iter().all(|id| id.starts_with("test-")) && ids[3] == ids[4], "{ids:?}");
    assert!(requests.iter().all(|(_, body)| body.windows(11).any(|w| w == b"rerun.test\"")));
    assert!(requests.iter().all(|(h, _)| h["rerun-gate-test"] == "true"), "marked as a test in a header too");
    assert!(!requests[0].0.contains_key("webhook-signature"), "the first one unsigned");
    assert_eq!(app.audit_after("workflow.receiver_checked").await[0]["all_met"], false);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_admin_checks_a_receiver_from_the_configuration_page_and_no_one_else_may() {
    let (_receiver, url) = Receiver::start(&[]).await;
    let mut config = crate::harness::example_config();
    config.workflows.iter_mut().for_each(|w| w.rerun_url = url.clone());
    let app = TestApp::spawn_configured(|_| {}, config).await;
    app.user("admin1", &["admin"], &[]).await;
    app.user("sato", &["staff"], &["sales"]).await;
    let form = [("workflow", "order-intake")];
    let staff = app.sign_in("sato", crate::harness::PASSWORD).await;
    let refused = app.call("admin/check_receiver", &form, Some(&staff)).await;
    assert_eq!(refused.status, reqwest::StatusCode::FORBIDDEN, "{}", refused.body);
    assert!(app.audit_after("workflow.receiver_checked").await.is_empty(), "nothing was sent for staff");
    let admin = app.sign_in("admin1", crate::harness::PASSWORD).await;
    let answer = app.call("admin/check_receiver", &form, Some(&admin)).await;
    assert_eq!(answer.status, reqwest::StatusCode::OK, "{}", answer.body);
    let check: contract::admin::ReceiverCheck = serde_json::from_str(&answer.body).unwrap();
    assert_eq!((check.url.as_str(), check.results.len(), check.all_met()), (url.as_str(), 5, false));
    let unknown = app.call("admin/check_receiver", &[("workflow", "nope")], Some(&admin)).await;
    assert_eq!(unknown.status, reqwest::StatusCode::UNPROCESSABLE_ENTITY, "{}", unknown.body);
}
