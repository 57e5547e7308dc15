//! The audit trail core (QUALITY 27, 30): events written with their changes, append-only, chained.
use crate::harness::{PASSWORD, TestApp};
use backend::db::{Conn, Db};
use backend::services::audit::{Verification, verify};
use domain::audit::{Actor, AuditEntry};
use domain::audit_action::AuditAction;
use reqwest::StatusCode;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sign_in_sign_out_and_user_changes_each_leave_an_audit_event_and_the_chain_verifies() {
    let app = TestApp::spawn().await;
    let sato = app.user("sato", &["staff"], &["sales"]).await;
    app.user("root", &["admin"], &[]).await;
    app.call("sign_in", &[("username", "sato"), ("password", "wrong-password")], None).await;
    let admin = app.sign_in("root", PASSWORD).await;
    let body = json!({"user_id": sato, "roles": ["staff", "manager"], "departments": ["sales"]});
    assert_eq!(app.call_json("admin/set_user_roles", body, Some(&admin)).await.status, StatusCode::OK);
    app.call("admin/set_user_disabled", &[("user_id", &sato.to_string()), ("disabled", "true")], Some(&admin)).await;
    app.call("sign_out", &[], Some(&admin)).await;

    let actions = app.audit_actions().await;
    for expected in
        ["user.created", "sign_in.failed", "sign_in.succeeded", "user.roles_changed", "user.disabled", "sign_out"]
    {
        assert!(actions.contains(&expected.to_string()), "{expected} missing from {actions:?}");
    }
    assert_eq!(verify(app.db()).await.unwrap(), Verification::Intact { events: actions.len() as i64 });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_security_event_carries_the_request_id_of_the_request_that_caused_it() {
    let app = TestApp::spawn().await;
    let answer = app.call("sign_in", &[("username", "ghost"), ("password", "wrong-password")], None).await;
    let request_id = answer.headers.get("x-request-id").expect("x-request-id").to_str().unwrap().to_string();
    let mut tx = app.db().begin_read().await.unwrap();
    let events = backend::db::audit::page_after(&mut tx, 0, 10).await.unwrap();
    let failed = events.iter().find(|e| e.action == "sign_in.failed").expect("sign_in.failed");
    assert_eq!(failed.request_id.as_deref(), Some(request_id.as_str()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_role_change_event_shows_before_and_after() {
    let app = TestApp::spawn().await;
    let sato = app.user("sato", &["staff"], &["sales"]).await;
    app.user("root", &["admin"], &[]).await;
    let admin = app.sign_in("root", PASSWORD).await;
    let body = json!({"user_id": sato, "roles": ["manager"], "departments": ["sales", "billing"]});
    app.call_json("admin/set_user_roles", body, Some(&admin)).await;
    let mut tx = app.db().begin_read().await.unwrap();
    let events = backend::db::audit::for_object(&mut tx, "user", &sato.to_string(), 1).await.unwrap();
    let event = &events[0];
    assert_eq!(event.action, "user.roles_changed");
    let staff_of_sales = r#""memberships":[{"department":"sales","role":"staff"}]"#;
    assert!(event.before_json.as_deref().unwrap().contains(staff_of_sales), "{:?}", event.before_json);
    let managers =
        r#""memberships":[{"department":"billing","role":"manager"},{"department":"sales","role":"manager"}]"#;
    assert!(event.after_json.as_deref().unwrap().contains(managers), "{:?}", event.after_json);
    assert_eq!(event.actor_label, "root");
}

/// A statement with the rights of whoever runs the database (on PostgreSQL a superuser, not the app's role).
pub async fn raw(db: &Db, sql: &str) -> Result<(), sqlx::Error> {
    if let Db::Postgres(pool, ..) = db {
        return crate::harness::as_superuser(pool, sql).await;
    }
    let mut tx = db.begin_write().await?;
    execute(&mut tx, sql).await?;
    tx.commit().await
}

async fn execute(tx: &mut Conn, sql: &str) -> Result<(), sqlx::Error> {
    match tx {
        Conn::Sqlite(t, _) => sqlx::query(sql).execute(&mut **t).await.map(drop),
        Conn::Postgres(t, _) => sqlx::query(sql).execute(&mut **t).await.map(drop),
    }
}

async fn append(tx: &mut Conn, action: AuditAction) -> Result<(), sqlx::Error> {
    let entry = AuditEntry::new(
        Actor::system(domain::audit::SystemActor::CommandLine),
        action,
        domain::audit::ObjectType::User,
        "sato",
    );
    backend::db::audit::append(tx, entry, chrono::Utc::now()).await.map(drop)
}

/// Writes lock rows and the trail's head in different orders (a step event appends, then completes the
/// operation; the dispatcher marks the operation, then appends). Every write takes the head first, so such a
/// pair waits instead of deadlocking, which PostgreSQL ends by aborting one of them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_that_appends_first_and_one_that_appends_last_wait_for_each_other_and_both_land() {
    let app = TestApp::spawn().await;
    let sato = app.user("sato", &["staff"], &["sales"]).await;
    let mark = format!("UPDATE users SET display_name = display_name || '.' WHERE id = {sato}");
    let mut marker = app.db().begin_write().await.unwrap();
    execute(&mut marker, &mark).await.unwrap();
    let (db, mark_too) = (app.db().clone(), mark.clone());
    let appender = tokio::spawn(async move {
        let mut tx = db.begin_write().await?;
        append(&mut tx, AuditAction::DepartmentRenamed).await?;
        execute(&mut tx, &mark_too).await?;
        tx.commit().await
    });
    // Let the other write get as far as it can before this one appends.
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    append(&mut marker, AuditAction::DepartmentCreated).await.unwrap();
    marker.commit().await.unwrap();
    appender.await.unwrap().unwrap();
    let actions = app.audit_actions().await;
    // The marker appended first (it held its row lock), then the appender.
    assert!(actions.ends_with(&["department.created".into(), "department.renamed".into()]), "{actions:?}");
    assert!(matches!(verify(app.db()).await.unwrap(), Verification::Intact { .. }));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_database_refuses_to_update_or_delete_an_audit_event() {
    let app = TestApp::spawn().await;
    app.user("sato", &["staff"], &["sales"]).await;
    let update = raw(app.db(), "UPDATE audit_events SET reason = 'edited' WHERE seq = 1").await;
    assert!(update.unwrap_err().to_string().contains("append-only"));
    let delete = raw(app.db(), "DELETE FROM audit_events WHERE seq = 1").await;
    assert!(delete.unwrap_err().to_string().contains("append-only"));
}

/// What someone with raw database access might do: switch the guard off and edit.
pub async fn tamper(db: &Db, sql: &str) {
    let (off, on) = match db {
        Db::Sqlite(..) => {
            ("DROP TRIGGER audit_events_no_update; DROP TRIGGER audit_events_no_delete;".to_string(), None)
        }
        Db::Postgres(..) => (
            "ALTER TABLE audit_events DISABLE TRIGGER audit_events_no_update_or_delete".to_string(),
            Some("ALTER TABLE audit_events ENABLE TRIGGER audit_events_no_update_or_delete"),
        ),
    };
    for statement in off.split(';').map(str::trim).filter(|s| !s.is_empty()) {
        raw(db, statement).await.unwrap();
    }
    raw(db, sql).await.unwrap();
    if let Some(on) = on {
        raw(db, on).await.unwrap();
    }
}

async fn three_events(app: &TestApp) {
    for name in ["a-user", "b-user", "c-user"] {
        app.user(name, &["auditor"], &[]).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hand_edited_event_is_found_at_its_sequence_number() {
    let app = TestApp::spawn().await;
    three_events(&app).await;
    tamper(app.db(), "UPDATE audit_events SET after_json = '{\"username\":\"mallory\"}' WHERE seq = 2").await;
    match verify(app.db()).await.unwrap() {
        Verification::Broken(b) => assert_eq!(b.seq, 2),
        intact => panic!("edit not found: {intact:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deleted_event_is_found_even_when_it_was_the_newest() {
    let app = TestApp::spawn().await;
    three_events(&app).await;
    tamper(app.db(), "DELETE FROM audit_events WHERE seq = 3").await;
    match verify(app.db()).await.unwrap() {
        Verification::Broken(b) => assert_eq!(b.seq, 3),
        intact => panic!("deletion not found: {intact:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parallel_writers_never_fork_the_chain() {
    let app = TestApp::spawn().await;
    let before = app.audit_actions().await.len() as i64;
    let attempts = (0..20).map(|i| {
        let app = &app;
        async move {
            let name = format!("ghost{i}");
            app.call("sign_in", &[("username", name.as_str()), ("password", "wrong-password")], None).await
        }
    });
    let answers = futures::future::join_all(attempts).await;
    // Each refused sign-in is one event; one told to come back later (more checks waiting than the queue holds) none.
    let refused = answers.iter().filter(|a| a.status == reqwest::StatusCode::UNPROCESSABLE_ENTITY).count() as i64;
    assert!(
        answers.iter().all(|a| matches!(a.status.as_u16(), 422 | 429)),
        "{:?}",
        answers.iter().map(|a| a.status).collect::<Vec<_>>()
    );
    assert!(refused > 0);
    assert_eq!(verify(app.db()).await.unwrap(), Verification::Intact { events: before + refused });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn appends_from_another_process_on_the_same_database_never_fork_the_chain() {
    let app = TestApp::spawn().await;
    app.user("sato", &["staff"], &["sales"]).await; // this process now knows the head
    // Another process (a command-line `user add`, or a second server on PostgreSQL) appends in between.
    let other = Db::connect(&app.database_url).await.unwrap();
    let other_state = server::startup::state(
        other,
        app.state.clock.clone(),
        backend::ServerOptions::new("http://127.0.0.1"),
        crate::harness::example_config(),
    )
    .await
    .unwrap();
    let new = |name: &str| contract::admin::NewUser {
        username: name.into(),
        display_name: name.into(),
        password: PASSWORD.into(),
        roles: vec![domain::roles::Role::Staff],
        departments: vec!["sales".into()],
        ..Default::default()
    };
    let system = domain::audit::Actor::system(domain::audit::SystemActor::CommandLine);
    backend::services::users::add(&other_state, system.clone(), None, new("ito")).await.unwrap();
    backend::services::users::add(&other_state, system, None, new("kato")).await.unwrap();
    app.user("mori", &["staff"], &["sales"]).await; // this process's remembered head is stale now
    // The same for a step event, which writes in one round trip when it can.
    let token = app.token("intake", &["sales"]).await;
    let body = json!({"process_id": "P-1", "workflow": "order-intake", "department": "sales",
        "steps": [{"name": "register_order", "idempotency_key": "a"}, {"name": "ai_summary", "idempotency_key": "b"}]});
    app.api(reqwest::Method::POST, "/api/v1/operations", &token, Some("k"), Some(&body)).await;
    backend::services::users::add(
        &other_state,
        domain::audit::Actor::system(domain::audit::SystemActor::CommandLine),
        None,
        new("sano"),
    )
    .await
    .unwrap();
    let event = json!({"seq": 1, "type": "started"});
    let answer = app
        .api(reqwest::Method::POST, "/api/v1/operations/P-1/steps/register_order/events", &token, None, Some(&event))
        .await;
    assert_eq!(answer.json()["applied"], true, "{}", answer.body);
    let actions = app.audit_actions().await;
    assert_eq!(actions.iter().filter(|a| *a == "user.created").count(), 5);
    assert!(actions.contains(&"step.started".to_string()));
    assert_eq!(verify(app.db()).await.unwrap(), Verification::Intact { events: actions.len() as i64 });
}
