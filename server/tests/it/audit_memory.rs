//! The signer's memory (`<key>.witness`): whoever keeps the database can remove the newest events and the
//! checkpoints that vouched for them, or rewrite an event and remove the checkpoints after it; the signer,
//! remembering what it signed beside its key, signs nothing over that history and raises the alarm.
use crate::audit_proof::{forge, remove_checkpoints, server, some_events, text};
use crate::audit_trail::raw;
use crate::harness::{PASSWORD, TestApp, public_key_file};
use app::backend::Db;
use app::backend::services::audit_proof::checkpoint_head;
use app::domain::signer_alarm::SignerAlarm;

/// What the database's keeper does to hide the newest events: removes them and the checkpoints that vouched
/// for them, and sets the head back to the event before.
async fn cut_history_after(db: &Db, seq: i64) {
    let mut conn = db.connection().await.unwrap();
    let hash = app::backend::db::audit_proof::event_hash(&mut conn, seq).await.unwrap().unwrap();
    drop(conn);
    let statements = match db {
        Db::Sqlite(..) => vec![
            "DROP TRIGGER audit_events_no_delete".to_string(),
            "DROP TRIGGER audit_signed_checkpoints_no_delete".to_string(),
        ],
        Db::Postgres(..) => vec![
            "ALTER TABLE audit_events DISABLE TRIGGER USER".to_string(),
            "ALTER TABLE audit_signed_checkpoints DISABLE TRIGGER USER".to_string(),
        ],
    };
    let mut statements = statements;
    statements.push(format!("DELETE FROM audit_events WHERE seq > {seq}"));
    statements.push(format!("DELETE FROM audit_signed_checkpoints WHERE seq > {seq}"));
    statements.push(format!("UPDATE audit_head SET seq = {seq}, hash = '{hash}' WHERE id = 1"));
    if let Db::Postgres(..) = db {
        statements.push("ALTER TABLE audit_events ENABLE TRIGGER USER".into());
        statements.push("ALTER TABLE audit_signed_checkpoints ENABLE TRIGGER USER".into());
    }
    for statement in statements {
        raw(db, &statement).await.unwrap();
    }
}

/// `server audit verify --public-key … --witness <memory>` against the app's database.
fn verify_with_witness(app: &TestApp) -> (Option<i32>, String) {
    let witness = app.witness().to_str().unwrap().to_string();
    let args = ["audit", "verify", "--public-key", public_key_file().to_str().unwrap(), "--witness", &witness];
    let output = server(&args, &app.database_url);
    (output.status.code(), text(&output))
}

async fn signed_at_head(app: &TestApp) -> i64 {
    checkpoint_head(&app.state).await.unwrap().expect("signed").seq
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_newest_events_removed_with_their_checkpoints_are_not_signed_over_and_raise_the_alarm_everywhere() {
    let app = TestApp::spawn().await;
    app.user("kansa", &["auditor"], &[]).await;
    app.user("kanri", &["admin"], &[]).await;
    some_events(&app, &["a-user", "b-user"]).await;
    let kept = signed_at_head(&app).await;
    some_events(&app, &["approved-what-they-should-not"]).await;
    let hidden = signed_at_head(&app).await;
    assert!(hidden > kept);
    assert!(matches!(verify_with_witness(&app), (Some(0), _)), "before: {}", verify_with_witness(&app).1);

    cut_history_after(app.db(), kept).await;
    let app = app.restarted().await;

    // Nothing is signed over the shortened history, however the signer is asked.
    some_events(&app, &["after-the-cut"]).await;
    assert_eq!(checkpoint_head(&app.state).await.unwrap(), None, "no checkpoint over a shortened history");
    let mut conn = app.db().connection().await.unwrap();
    let newest = app::backend::db::audit_proof::latest_checkpoint(&mut conn, None).await.unwrap().unwrap();
    assert_eq!(newest.seq, kept, "the database holds no checkpoint beyond the cut");
    drop(conn);

    // The alarm, with the numbers, on every channel.
    let alarm = app.state.audit_signer.alarm().expect("the alarm is raised");
    assert_eq!(alarm, SignerAlarm::HistoryChanged { seq: hidden, hash: alarm_hash(&alarm), found: None, head: kept });
    let ready = app.http.get(format!("{}/readyz", app.url)).send().await.unwrap().text().await.unwrap();
    assert!(ready.contains("audit trail broken") && ready.contains(&format!("event {hidden}")), "{ready}");
    let metrics = app.http.get(format!("{}/metrics", app.url)).send().await.unwrap().text().await.unwrap();
    assert!(metrics.contains("rerun_gate_audit_trail_broken 1"), "{metrics}");
    for (user, page) in [("kansa", "/audit"), ("kanri", "/admin/configuration")] {
        let cookie = app.sign_in(user, PASSWORD).await;
        let html = app.http.get(format!("{}{page}", app.url)).header("cookie", &cookie).send().await.unwrap();
        let html = html.text().await.unwrap();
        assert!(html.contains("data-testid=\"signer-alarm\""), "{user} sees the alarm on {page}");
        assert!(html.contains(&hidden.to_string()), "with the numbers, on {page}");
    }
    assert_eq!(app.notifications_of("kansa", "audit_trail_broken").await, 1, "the auditor is told");
    assert_eq!(app.notifications_of("kanri", "audit_trail_broken").await, 1, "the admin is told");

    // The signer's memory names the first vouched event that is gone.
    let (code, said) = verify_with_witness(&app);
    assert_eq!(code, Some(1), "{said}");
    assert!(said.contains(&format!("event {hidden}")), "{said}");
}

fn alarm_hash(alarm: &SignerAlarm) -> String {
    match alarm {
        SignerAlarm::HistoryChanged { hash, .. } => hash.clone(),
        other => panic!("not a changed history: {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rewritten_event_whose_later_checkpoints_were_removed_is_not_signed_over() {
    let app = TestApp::spawn().await;
    some_events(&app, &["a-user", "b-user"]).await;
    let first = signed_at_head(&app).await;
    some_events(&app, &["c-user", "d-user"]).await;
    let second = signed_at_head(&app).await;
    forge(app.db(), first + 1).await;
    remove_checkpoints(app.db()).await;
    let app = app.restarted().await;

    assert_eq!(checkpoint_head(&app.state).await.unwrap(), None);
    match app.state.audit_signer.alarm() {
        Some(SignerAlarm::HistoryChanged { seq, found: Some(_), .. }) => assert_eq!(seq, second),
        other => panic!("the rewritten history is named: {other:?}"),
    }
    let (code, said) = verify_with_witness(&app);
    assert_eq!(code, Some(1), "{said}");
    assert!(said.contains(&format!("event {}", first + 1)) || said.contains(&format!("event {second}")), "{said}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_normal_restart_raises_nothing_and_signing_goes_on() {
    let app = TestApp::spawn().await;
    some_events(&app, &["a-user"]).await;
    let first = signed_at_head(&app).await;
    let app = app.restarted().await;
    assert_eq!(app.state.audit_signer.alarm(), None);
    some_events(&app, &["b-user"]).await;
    assert!(signed_at_head(&app).await > first);
    assert!(matches!(verify_with_witness(&app), (Some(0), _)), "{}", verify_with_witness(&app).1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_memory_is_reported_and_never_recreated() {
    let app = TestApp::spawn().await;
    some_events(&app, &["a-user"]).await;
    signed_at_head(&app).await;
    std::fs::remove_file(app.witness()).unwrap();
    let app = app.restarted().await;
    some_events(&app, &["b-user"]).await;
    assert_eq!(checkpoint_head(&app.state).await.unwrap(), None, "nothing signed without the memory");
    assert!(matches!(app.state.audit_signer.alarm(), Some(SignerAlarm::MemoryLost { .. })));
    assert!(!app.witness().exists(), "never recreated silently");
}
