//! Separation of duties (QUALITY 11, issue 47), each hole as an attack: whoever prepared a rerun — started it,
//! confirmed one of its checks, submitted it, recorded a manual verdict its plan rests on; for a bulk rerun also
//! created, requested, confirmed or submitted it — never approves or rejects it, single and bulk; a verdict by
//! hand is a decision that needs a fresh sign-in.
use crate::batches::{bulk, by_filter};
use crate::fixtures::{caller, count, stalled};
use crate::harness::TestApp;
use backend::services::{Caller, approvals::decide, batches, holds, rerun_requests};
use chrono::Duration;
use contract::AppError;
use domain::approval::Decision;
use domain::reconciliation::Verdict;

fn cause() -> rerun_requests::Cause {
    rerun_requests::Cause { class: Some("outside_service_outage".into()), text: Some("503".into()) }
}

/// Staff start a request for a stalled order; `checker` confirms the checks in `checks` and `staff` the others;
/// `submitter` sends it for approval.
async fn prepared(
    app: &TestApp,
    process_id: &str,
    (staff, checker, submitter): (&Caller, &Caller, &Caller),
    checks: &[i64],
) -> String {
    let token = app.token(&format!("intake-{process_id}"), &["sales"]).await;
    stalled(app, &token, process_id).await;
    let started = rerun_requests::start(&app.state, staff, process_id, "再実行する").await.unwrap();
    let contract::reruns::StartAnswer::Created { id } = started else { panic!("the plan should be ready") };
    for n in 1..=5 {
        let who = if checks.contains(&n) { checker } else { staff };
        rerun_requests::confirm(&app.state, who, &id, n, "確認した", cause()).await.unwrap();
    }
    rerun_requests::submit(&app.state, submitter, &id).await.unwrap();
    id
}

async fn sales_team(app: &TestApp) -> (Caller, Caller, Caller) {
    app.user("sato", &["staff"], &["sales"]).await;
    app.user("suzuki", &["manager"], &["sales"]).await;
    app.user("takahashi", &["manager"], &["sales"]).await;
    (caller(app, "sato").await, caller(app, "suzuki").await, caller(app, "takahashi").await)
}

fn forbidden(result: &Result<(), AppError>) -> bool {
    matches!(result, Err(AppError::Forbidden))
}

async fn dispatches(app: &TestApp, id: &str) -> i64 {
    count(app, "SELECT COUNT(*) FROM dispatches WHERE request_id = $1", id).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_manager_who_confirmed_the_checks_and_submitted_a_request_can_neither_approve_nor_reject_it() {
    let app = TestApp::spawn().await;
    let (sato, suzuki, takahashi) = sales_team(&app).await;
    let id = prepared(&app, "ORD-SOD", (&sato, &suzuki, &suzuki), &[1, 2, 3, 4, 5]).await;

    assert!(forbidden(&decide(&app.state, &suzuki, &id, Decision::Approve, "").await), "the checker approves");
    assert!(forbidden(&decide(&app.state, &suzuki, &id, Decision::Reject, "やめる").await), "the checker rejects");
    assert_eq!(dispatches(&app, &id).await, 0);

    decide(&app.state, &takahashi, &id, Decision::Approve, "証跡を確認した").await.unwrap();
    assert_eq!(dispatches(&app, &id).await, 1, "another manager of the department decides");
    let approved = app.audit_after("rerun_request.approved").await;
    let makers = &approved[0]["makers"];
    for (user, part) in [(&sato, "started"), (&suzuki, "confirmed_check"), (&suzuki, "submitted")] {
        assert!(
            makers.as_array().unwrap().iter().any(|m| m["user_id"] == user.user_id() && m["part"] == part),
            "the approval's audit event names {} as {part}: {makers}",
            user.user().username
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn confirming_a_single_check_or_only_submitting_makes_a_maker() {
    let app = TestApp::spawn().await;
    let (sato, suzuki, takahashi) = sales_team(&app).await;
    let one_check = prepared(&app, "ORD-ONE", (&sato, &suzuki, &sato), &[3]).await;
    assert!(forbidden(&decide(&app.state, &suzuki, &one_check, Decision::Approve, "").await));
    rerun_requests::cancel(&app.state, &suzuki, &one_check, "取り下げる").await.unwrap(); // a maker may withdraw

    let submitted_only = prepared(&app, "ORD-SUB", (&sato, &sato, &takahashi), &[]).await;
    assert!(forbidden(&decide(&app.state, &takahashi, &submitted_only, Decision::Approve, "").await));
    decide(&app.state, &suzuki, &submitted_only, Decision::Approve, "").await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_manual_verdict_needs_a_fresh_sign_in_and_its_recorder_cannot_approve_the_plan_resting_on_it() {
    let app = TestApp::spawn().await;
    let (_, _, takahashi) = sales_team(&app).await;
    let token = app.token("intake", &["sales"]).await;
    stalled(&app, &token, "ORD-MV").await;
    let why = "AI 事業者のサポートが未実行と回答";

    app.clock.advance(Duration::minutes(11)); // past the fresh window of takahashi's sign-in
    let stale = holds::manual_verdict(&app.state, &takahashi, "ORD-MV", "ai_summary", Verdict::NotExecuted, why).await;
    assert!(matches!(stale, Err(AppError::SignInAgain)), "{stale:?}");
    let takahashi = caller(&app, "takahashi").await; // signed in again
    holds::manual_verdict(&app.state, &takahashi, "ORD-MV", "ai_summary", Verdict::NotExecuted, why).await.unwrap();
    let recorded = app.audit_after("step.manual_verdict").await;
    assert_eq!(recorded[0]["authenticated"]["method"]["kind"], "password", "audited with how they signed in");

    let sato = caller(&app, "sato").await;
    let started = rerun_requests::start(&app.state, &sato, "ORD-MV", "再実行する").await.unwrap();
    let contract::reruns::StartAnswer::Created { id } = started else { panic!("the plan should be ready") };
    for n in 1..=5 {
        rerun_requests::confirm(&app.state, &sato, &id, n, "確認した", cause()).await.unwrap();
    }
    rerun_requests::submit(&app.state, &sato, &id).await.unwrap();
    let own = decide(&app.state, &takahashi, &id, Decision::Approve, "").await;
    assert!(forbidden(&own), "the recorder of the verdict the plan rests on: {own:?}");
    assert_eq!(dispatches(&app, &id).await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_manager_who_confirmed_and_submitted_a_bulk_rerun_cannot_approve_it() {
    let b = bulk().await;
    b.app.user("takahashi", &["manager"], &["sales"]).await;
    let all: Vec<String> = (0..3).map(|i| format!("OUT-{i}")).collect();
    b.stalled(&all, "sales").await;
    let id = b.previewed(by_filter()).await;
    batches::request(&b.app.state, &b.staff, &id, Some(60)).await.unwrap();
    for n in 1..=5 {
        batches::confirm(&b.app.state, &b.owner, &id, n, "ログで確認した", cause()).await.unwrap();
    }
    batches::submit(&b.app.state, &b.owner, &id).await.unwrap();

    assert!(forbidden(&batches::decide(&b.app.state, &b.owner, &id, true, "").await), "checker and submitter");
    assert!(forbidden(&batches::decide(&b.app.state, &b.staff, &id, true, "").await), "staff never decide");
    let takahashi = caller(&b.app, "takahashi").await;
    batches::decide(&b.app.state, &takahashi, &id, true, "").await.unwrap();
    assert_eq!(b.view(&id).await.status.as_str(), "dispatching");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_admin_cannot_give_themselves_the_manager_role_but_another_admin_can() {
    use backend::services::users;
    use domain::roles::Role;
    let app = TestApp::spawn().await;
    let kanri = app.user("kanri", &["admin"], &[]).await;
    app.user("nibanme", &["admin"], &[]).await;
    let admin = caller(&app, "kanri").await;

    let promoted =
        users::set_access(&app.state, &admin, kanri, vec![Role::Admin, Role::Manager], vec!["sales".into()], vec![]);
    let promoted = promoted.await;
    assert!(
        matches!(&promoted, Err(AppError::Conflict { problem, .. }) if *problem == contract::Conflict::OwnAccess),
        "{promoted:?}"
    );
    assert!(!caller(&app, "kanri").await.person().has(Role::Manager), "nothing changed");

    let other = caller(&app, "nibanme").await;
    users::set_access(&app.state, &other, kanri, vec![Role::Admin, Role::Manager], vec!["sales".into()], vec![])
        .await
        .unwrap();
    assert!(caller(&app, "kanri").await.person().has(Role::Manager));
}

/// The data of a database made before memberships: roles and departments held side by side.
const HELD_BEFORE: &[&str] = &[
    "INSERT INTO departments (code, name, created_at) VALUES ('sales', '営業部', '2026-01-01T00:00:00Z')",
    "INSERT INTO departments (code, name, created_at) VALUES ('billing', '経理部', '2026-01-01T00:00:00Z')",
    "INSERT INTO users (username, display_name, password_hash, created_at, updated_at)
     SELECT name, name, 'x', '2026-01-01T00:00:00Z', '2026-01-01T00:00:00Z'
     FROM (SELECT 'staff1' AS name UNION ALL SELECT 'both' UNION ALL SELECT 'reader' UNION ALL SELECT 'owner1') n",
    "INSERT INTO user_roles (user_id, role) SELECT id, 'staff' FROM users WHERE username = 'staff1'",
    "INSERT INTO user_roles (user_id, role) SELECT id, 'manager' FROM users WHERE username IN ('both', 'owner1')",
    "INSERT INTO user_roles (user_id, role) SELECT id, 'staff' FROM users WHERE username = 'owner1'",
    "INSERT INTO user_roles (user_id, role) SELECT id, 'auditor' FROM users WHERE username = 'reader'",
    "INSERT INTO user_departments (user_id, department_id) SELECT u.id, d.id FROM users u, departments d
     WHERE (u.username IN ('staff1', 'owner1', 'reader') AND d.code = 'sales') OR u.username = 'both'",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upgrade_keeps_what_everyone_could_do_as_memberships_and_lists_the_crossed_ones_for_review() {
    use backend::Db;
    let url = crate::harness::fresh_database_url().await;
    let owner = crate::harness::migrate_url(&url).unwrap_or_else(|| url.clone());
    let db = Db::connect(&owner).await.unwrap();
    // Every migration before memberships, then the old shape's data, then the rest.
    macro_rules! before_memberships {
        ($pool:expr, $dir:literal) => {{
            let mut migrator = sqlx::migrate!($dir);
            migrator.migrations =
                migrator.migrations.iter().filter(|m| m.version < 33).cloned().collect::<Vec<_>>().into();
            migrator.run($pool).await.unwrap();
            for sql in HELD_BEFORE {
                sqlx::query(sql).execute($pool).await.unwrap();
            }
        }};
    }
    match &db {
        Db::Sqlite(pool, ..) => before_memberships!(pool, "../migrations/sqlite"),
        Db::Postgres(pool, ..) => before_memberships!(pool, "../migrations/postgres"),
    }
    db.migrate().await.unwrap();

    let mut tx = db.begin_read().await.unwrap();
    let mut held = std::collections::BTreeMap::new();
    for name in ["staff1", "both", "reader", "owner1"] {
        let user = backend::db::users::by_username(&mut tx, name).await.unwrap().unwrap();
        let pairs: Vec<String> = backend::db::users::memberships(&mut tx, user.id)
            .await
            .unwrap()
            .into_iter()
            .map(|m| format!("{}:{}", m.code, m.role))
            .collect();
        let roles = backend::db::users::roles(&mut tx, user.id).await.unwrap();
        let review = backend::db::users::access_review(&mut tx, user.id).await.unwrap();
        held.insert(name, (pairs, roles, review.is_some()));
    }
    let pairs = |list: &[&str]| list.iter().map(|p| p.to_string()).collect::<Vec<_>>();
    assert_eq!(held["staff1"], (pairs(&["sales:staff"]), vec![], false));
    assert_eq!(held["owner1"], (pairs(&["sales:manager", "sales:staff"]), vec![], false), "staff and manager of one");
    assert_eq!(
        held["both"],
        (pairs(&["billing:manager", "sales:manager"]), vec![], true),
        "a manager in two departments, to review"
    );
    assert_eq!(held["reader"], (vec![], vec!["auditor".to_string()], true), "a department without a role, to review");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_a_maker_withdraws_a_request_and_a_manager_who_did_not_prepare_it_decides_on_it_instead() {
    use domain::approval::{MakerPart, Standing};
    let app = TestApp::spawn().await;
    let (sato, suzuki, _) = sales_team(&app).await;
    let id = prepared(&app, "ORD-WD", (&sato, &sato, &sato), &[]).await;

    let refused = rerun_requests::cancel(&app.state, &suzuki, &id, "取り下げる").await;
    assert!(forbidden(&refused), "a manager withdraws what staff prepared: {refused:?}");
    let theirs = rerun_requests::view(&app.state, &suzuki, &id).await.unwrap();
    assert_eq!(
        (theirs.standing, theirs.may_cancel),
        (Standing::MayDecide, false),
        "the decision page offers a decision"
    );
    let mine = rerun_requests::view(&app.state, &sato, &id).await.unwrap();
    assert!(matches!(mine.standing, Standing::Maker(_)) && mine.may_cancel, "{:?}", mine.standing);
    assert_eq!(mine.asked, ["suzuki san", "takahashi san"], "the page says whom the approval was asked of");
    assert!(mine.makers.iter().any(|m| m.name == "sato san" && m.part == MakerPart::Submitted), "{:?}", mine.makers);
    assert!(
        mine.steps.iter().any(|s| s.name == "ai_summary" && s.latest_verdict.is_some()),
        "the evidence is on the page"
    );
    rerun_requests::cancel(&app.state, &sato, &id, "取り下げる").await.unwrap();
}

/// The inbox asks the same rule as the decision: each item says where the reader stands.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_inbox_lists_single_and_bulk_requests_together_oldest_deadline_first_each_saying_where_the_reader_stands() {
    use backend::services::inbox::inbox;
    use contract::reruns::{Stage, Subject};
    use domain::approval::{MakerPart, Standing};
    let b = bulk().await;
    b.app.user("takahashi", &["manager"], &["sales"]).await;
    let all: Vec<String> = (0..2).map(|i| format!("OUT-{i}")).collect();
    b.stalled(&all, "sales").await;
    // A bulk rerun submitted first (its deadline comes first), then a request whose first check the owner confirmed.
    let batch = b.previewed(by_filter()).await;
    batches::request(&b.app.state, &b.staff, &batch, Some(60)).await.unwrap();
    for n in 1..=5 {
        batches::confirm(&b.app.state, &b.staff, &batch, n, "ログで確認した", cause()).await.unwrap();
    }
    batches::submit(&b.app.state, &b.staff, &batch).await.unwrap();
    b.app.clock.advance(Duration::minutes(10));
    let single = prepared(&b.app, "ORD-INBOX", (&b.staff, &b.owner, &b.staff), &[1]).await;
    let takahashi = caller(&b.app, "takahashi").await; // signed in now: a decision needs a fresh sign-in

    let theirs = inbox(&b.app.state, &takahashi).await.unwrap();
    let waiting: Vec<(&str, Subject, Standing)> =
        theirs.waiting.iter().map(|i| (i.id.as_str(), i.subject, i.standing)).collect();
    assert_eq!(
        waiting,
        [
            (batch.as_str(), Subject::Batch, Standing::MayDecide),
            (single.as_str(), Subject::Request, Standing::MayDecide)
        ],
        "single and bulk together, the oldest deadline first"
    );
    assert_eq!(theirs.waiting[0].operations, 2);
    assert_eq!(theirs.waiting[1].department, "営業部", "the department by its name");

    let owners = inbox(&b.app.state, &b.owner).await.unwrap();
    let standing = owners.waiting.iter().find(|i| i.id == single).unwrap().standing;
    assert_eq!(standing, Standing::Maker(MakerPart::ConfirmedCheck), "the checker hears why they do not decide");
    let listed = owners.requested.iter().find(|i| i.id == single).expect("a maker finds it under their requests");
    assert_eq!(listed.stage, Stage::Request(domain::rerun_request::RerunRequestStatus::PendingApproval));

    decide(&b.app.state, &takahashi, &single, Decision::Approve, "").await.unwrap();
    let after = inbox(&b.app.state, &takahashi).await.unwrap();
    assert!(after.waiting.iter().all(|i| i.id != single), "decided: no longer waiting");
    let decided = after.decided.iter().find(|i| i.id == single).expect("under their decisions");
    assert_eq!(decided.my_decision, Some(Decision::Approve));
    let staffs = inbox(&b.app.state, &b.staff).await.unwrap();
    assert!(!staffs.decides && staffs.waiting.is_empty(), "staff decide nothing");
    assert_eq!(staffs.requested.len(), 2, "staff find the request and the bulk rerun they prepared");
}
