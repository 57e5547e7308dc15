//! A decision counts for the person whose access holds when it is recorded (finding 3 of the hardening round):
//! each attack gives a decision through a caller loaded before the approver's access ended — as a request that
//! began just before a disable, a deprovisioning, a membership taken away or a sign-out everywhere would — on
//! every path: a single request, a bulk rerun, a resumption after a failed stage; and then the race itself.
use crate::batches::{bulk_with, by_filter, ids};
use crate::fixtures::{caller, pending_request};
use crate::harness::TestApp;
use backend::services::{Caller, approvals, batches, users};
use contract::AppError;
use domain::approval::Decision;
use domain::roles::Role;
use reqwest::Method;

/// Sales with staff sato, managers suzuki and kato, an admin, and ORD-A1 waiting for one approval.
async fn waiting() -> (TestApp, String) {
    let app = TestApp::spawn().await;
    let token = app.token("intake", &["sales"]).await;
    app.user("sato", &["staff"], &["sales"]).await;
    app.user("suzuki", &["manager"], &["sales"]).await;
    app.user("root", &["admin"], &[]).await;
    let id = pending_request(&app, &token, &caller(&app, "sato").await, "ORD-A1").await;
    (app, id)
}

async fn status(app: &TestApp, id: &str) -> String {
    let mut tx = app.db().begin_read().await.unwrap();
    backend::db::rerun_requests::by_id(&mut tx, id).await.unwrap().unwrap().status.to_string()
}

async fn approve(app: &TestApp, who: &Caller, id: &str) -> Result<(), AppError> {
    approvals::decide(&app.state, who, id, Decision::Approve, "").await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_given_after_an_admin_disabled_the_approver_is_refused() {
    let (app, id) = waiting().await;
    let suzuki = caller(&app, "suzuki").await; // his request began
    users::set_disabled(&app.state, &caller(&app, "root").await, suzuki.user_id(), true).await.unwrap();
    let late = approve(&app, &suzuki, &id).await;
    assert!(matches!(late, Err(AppError::Unauthorized)), "{late:?}");
    assert_eq!(status(&app, &id).await, "pending_approval");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_given_after_the_approver_lost_his_membership_is_refused() {
    let (app, id) = waiting().await;
    let suzuki = caller(&app, "suzuki").await;
    let root = caller(&app, "root").await;
    let staff_only = vec![Role::Staff];
    users::set_access(&app.state, &root, suzuki.user_id(), staff_only, vec!["sales".into()], vec![]).await.unwrap();
    let late = approve(&app, &suzuki, &id).await;
    assert!(late.is_err(), "approved as a manager he no longer is");
    assert_eq!(status(&app, &id).await, "pending_approval");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_from_a_browser_signed_out_everywhere_is_refused() {
    let (app, id) = waiting().await;
    let suzuki = caller(&app, "suzuki").await;
    users::sign_out_everywhere(&app.state, &caller(&app, "suzuki").await).await.unwrap();
    let late = approve(&app, &suzuki, &id).await;
    assert!(matches!(late, Err(AppError::Unauthorized)), "{late:?}");
    // Signed in again, he decides.
    approve(&app, &caller(&app, "suzuki").await, &id).await.unwrap();
    assert_eq!(status(&app, &id).await, "approved");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_given_after_the_directory_removed_the_approver_is_refused() {
    let mut config = crate::directory::with_directory(crate::harness::example_config());
    config.workflows.iter_mut().for_each(|w| w.approvals_required = 1);
    let app = TestApp::spawn_configured(|_| {}, config).await;
    let directory = crate::directory::directory_token(&app).await;
    let scim_id = crate::directory::provisioned(&app, &directory, "tanaka", "sales-approvers").await;
    let token = app.token("intake", &["sales"]).await;
    app.user("sato", &["staff"], &["sales"]).await;
    let id = pending_request(&app, &token, &caller(&app, "sato").await, "ORD-A2").await;
    let tanaka = caller(&app, "tanaka").await;
    let path = format!("/Users/{scim_id}");
    crate::directory::scim(&app, &directory, Method::DELETE, &path, None).await;
    let late = approve(&app, &tanaka, &id).await;
    assert!(matches!(late, Err(AppError::Unauthorized)), "{late:?}");
    assert_eq!(status(&app, &id).await, "pending_approval");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bulk_reruns_approval_given_after_the_approver_was_disabled_is_refused() {
    let b = bulk_with(|_| {}).await;
    b.stalled(&ids("ORD-AB", 2), "sales").await;
    let id = b.previewed(by_filter()).await;
    batches::request(&b.app.state, &b.staff, &id, Some(60)).await.unwrap();
    b.checked_and_submitted(&id).await;
    b.app.user("root", &["admin"], &[]).await;
    let root = caller(&b.app, "root").await;
    users::set_disabled(&b.app.state, &root, b.owner.user_id(), true).await.unwrap();
    let late = batches::decide(&b.app.state, &b.owner, &id, true, "").await;
    assert!(matches!(late, Err(AppError::Unauthorized)), "{late:?}");
    assert_eq!(b.view(&id).await.status.as_str(), "pending_approval");
}

/// The race as it was found: the approver decides while the admin disables him, 32 times, 0–2 ms apart. Whatever the order,
/// an approval that made the request approved was recorded before the disable, never after it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_racing_the_approvers_disable_never_lands_after_it() {
    let app = TestApp::spawn().await;
    let token = app.token("intake", &["sales"]).await;
    app.user("sato", &["staff"], &["sales"]).await;
    app.user("root", &["admin"], &[]).await;
    let staff = caller(&app, "sato").await;
    for n in 0..32 {
        let manager = format!("m{n}");
        app.user(&manager, &[Role::Manager.as_str()], &["sales"]).await;
        let id = pending_request(&app, &token, &staff, &format!("ORD-R{n}")).await;
        let (approver, root) = (caller(&app, &manager).await, caller(&app, "root").await);
        // 0–2 ms apart, either first.
        let pause = |ms: u64| tokio::time::sleep(std::time::Duration::from_millis(ms));
        let (_, disabled) = tokio::join!(
            async {
                pause(n % 3).await;
                approve(&app, &approver, &id).await
            },
            async {
                pause((n / 3) % 3).await;
                users::set_disabled(&app.state, &root, approver.user_id(), true).await
            }
        );
        disabled.unwrap();
        let events = backend::db::audit::page_after(&mut app.db().begin_read().await.unwrap(), 0, 100_000).await;
        let events = events.unwrap();
        let at = |action: &str| {
            events.iter().position(|e| e.action == action && e.after_json.as_deref().is_some_and(|a| a.contains(&id)))
        };
        let disabled = events
            .iter()
            .rposition(|e| e.action == "user.disabled" && e.object_id == approver.user_id().to_string())
            .expect("the disable is in the trail");
        if let Some(approved) = at("rerun_request.approved") {
            assert!(approved < disabled, "try {n}: approved after the approver was disabled");
        }
    }
}
