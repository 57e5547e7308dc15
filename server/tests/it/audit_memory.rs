//! The signer's memory (`<key>.witness`): whoever keeps the database can remove the newest events and the
//! checkpoints that vouched for them, or rewrite an event and remove the checkpoints after it; the signer,
//! remembering what it signed beside its key, signs nothing over that history and raises the alarm.
use crate::audit_proof::{forge, remove_checkpoints, server, some_events, text};
use crate::audit_trail::raw;
use crate::harness::{PASSWORD, TestApp, public_key_file};
use backend::Db;
use backend::services::audit_memory::{resolve, send_digest_if_due};
use backend::services::audit_proof::checkpoint_head;
use contract::AppError;
use domain::signer_alarm::{SignerAlarm, TrueHistory};

/// What the database's keeper does to hide the newest events: removes them and the checkpoints that vouched
/// for them, sets the head back to the event before, and has the Merkle tree made again from what is left (as
/// a restored older backup would hold it).
async fn cut_history_after(db: &Db, seq: i64) {
    let mut conn = db.connection().await.unwrap();
    let hash = backend::db::audit_proof::event_hash(&mut conn, seq).await.unwrap().unwrap();
    drop(conn);
    let statements = match db {
        Db::Sqlite(..) => vec![
            "DROP TRIGGER audit_events_no_delete".to_string(),
            "DROP TRIGGER audit_signed_checkpoints_no_delete".to_string(),
            "DROP TRIGGER audit_tree_nodes_no_delete".to_string(),
        ],
        Db::Postgres(..) => vec![
            "ALTER TABLE audit_events DISABLE TRIGGER USER".to_string(),
            "ALTER TABLE audit_signed_checkpoints DISABLE TRIGGER USER".to_string(),
            "ALTER TABLE audit_tree_nodes DISABLE TRIGGER USER".to_string(),
        ],
    };
    let mut statements = statements;
    statements.push(format!("DELETE FROM audit_events WHERE seq > {seq}"));
    statements.push(format!("DELETE FROM audit_signed_checkpoints WHERE seq > {seq}"));
    statements.push(format!("UPDATE audit_head SET seq = {seq}, hash = '{hash}' WHERE id = 1"));
    statements.push("DELETE FROM audit_tree_nodes".into());
    statements.push("UPDATE audit_tree SET size = 0, frontier = substr(frontier, 1, 0) WHERE id = 1".into());
    if let Db::Postgres(..) = db {
        statements.push("ALTER TABLE audit_events ENABLE TRIGGER USER".into());
        statements.push("ALTER TABLE audit_signed_checkpoints ENABLE TRIGGER USER".into());
        statements.push("ALTER TABLE audit_tree_nodes ENABLE TRIGGER USER".into());
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
    let newest = backend::db::audit_proof::latest_checkpoint(&mut conn, None).await.unwrap().unwrap();
    assert_eq!(newest.seq, kept, "the database holds no checkpoint beyond the cut");
    drop(conn);

    // The alarm, with the numbers, on every channel.
    let alarm = backend::services::audit_proof::signer(&app.state).alarm().expect("the alarm is raised");
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
    match backend::services::audit_proof::signer(&app.state).alarm() {
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
    assert_eq!(backend::services::audit_proof::signer(&app.state).alarm(), None);
    some_events(&app, &["b-user"]).await;
    assert!(signed_at_head(&app).await > first);
    assert!(matches!(verify_with_witness(&app), (Some(0), _)), "{}", verify_with_witness(&app).1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_memory_others_may_read_or_with_a_line_it_did_not_sign_is_reported_and_nothing_is_signed() {
    use std::os::unix::fs::PermissionsExt;
    let app = TestApp::spawn().await;
    some_events(&app, &["a-user"]).await;
    let signed = signed_at_head(&app).await;
    let memory = app.witness().to_path_buf();
    std::fs::set_permissions(&memory, std::fs::Permissions::from_mode(0o644)).unwrap();
    let app = app.restarted().await;
    match backend::services::audit_proof::signer(&app.state).alarm() {
        Some(SignerAlarm::MemoryLost { problem }) => assert!(problem.contains("others may read"), "{problem}"),
        other => panic!("a memory others may read is reported: {other:?}"),
    }
    std::fs::set_permissions(&memory, std::fs::Permissions::from_mode(0o600)).unwrap();
    let text = std::fs::read_to_string(&memory).unwrap();
    std::fs::write(&memory, text.replace(&format!("\"seq\":{signed},"), &format!("\"seq\":{},", signed + 1))).unwrap();
    let app = app.restarted().await;
    some_events(&app, &["b-user"]).await;
    assert_eq!(checkpoint_head(&app.state).await.unwrap(), None, "nothing signed on a memory it cannot trust");
    match backend::services::audit_proof::signer(&app.state).alarm() {
        Some(SignerAlarm::MemoryLost { problem }) => assert!(problem.contains("not signed by this key"), "{problem}"),
        other => panic!("a changed line is reported: {other:?}"),
    }
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
    assert!(matches!(backend::services::audit_proof::signer(&app.state).alarm(), Some(SignerAlarm::MemoryLost { .. })));
    assert!(!app.witness().exists(), "never recreated silently");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_alarm_stands_across_restarts_until_a_person_resolves_it_and_the_resolution_is_recorded_and_signed() {
    let app = TestApp::spawn().await;
    app.user("kansa", &["auditor"], &[]).await;
    some_events(&app, &["a-user"]).await;
    let kept = signed_at_head(&app).await;
    some_events(&app, &["b-user"]).await;
    signed_at_head(&app).await;
    cut_history_after(app.db(), kept).await;
    let app = app.restarted().await.restarted().await;
    assert!(
        backend::services::audit_proof::signer(&app.state).alarm().is_some(),
        "the alarm stands after a second restart"
    );
    assert_eq!(app.notifications_of("kansa", "audit_trail_broken").await, 1, "told once, not at every start");

    // The memory's history cannot be declared true while the database does not hold it.
    let refused = resolve(&app.state, TrueHistory::Memory, "田中 健", "restored").await;
    assert!(matches!(refused, Err(AppError::BadRequest(ref why)) if why.contains("does not hold")), "{refused:?}");
    assert!(backend::services::audit_proof::signer(&app.state).alarm().is_some());

    // The database's history accepted as true: said by whom and why, recorded, signed over at once.
    let signed =
        resolve(&app.state, TrueHistory::Database, "田中 健", "the copy of 10:00 restored after the disk failed")
            .await
            .unwrap()
            .expect("a checkpoint over the resolution");
    assert_eq!(backend::services::audit_proof::signer(&app.state).alarm(), None);
    let resolved = app.audit_after("audit.alarm_resolved").await;
    assert_eq!(resolved.len(), 1);
    assert_eq!(resolved[0]["by"], "田中 健", "{}", resolved[0]);
    assert_eq!(resolved[0]["history"], "database", "{}", resolved[0]);
    let mut conn = app.db().connection().await.unwrap();
    let (head, _) = backend::db::audit::head(&mut conn).await.unwrap();
    drop(conn);
    assert_eq!(signed.seq, head, "the checkpoint vouches for the resolution, the trail's newest event");
    let (code, said) = verify_with_witness(&app);
    assert_eq!(code, Some(0), "{said}");
    assert!(said.contains("found the database history true"), "{said}");
    let app = app.restarted().await;
    assert_eq!(backend::services::audit_proof::signer(&app.state).alarm(), None, "resolved for good");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restoring_an_older_backup_raises_the_alarm_and_the_documented_resolution_clears_it() {
    let app = TestApp::spawn().await;
    let Some(path) = app.database_file().map(str::to_string) else {
        return; // `server backup` is SQLite's; PostgreSQL's copies are pg_dump's
    };
    some_events(&app, &["a-user"]).await;
    signed_at_head(&app).await;
    let backup = std::env::temp_dir().join(format!("rerun-gate-backup-{}.db", uuid::Uuid::new_v4().simple()));
    let taken = server(&["backup", "--to", backup.to_str().unwrap()], &app.database_url);
    assert!(taken.status.success(), "{}", text(&taken));
    some_events(&app, &["b-user", "c-user"]).await;
    let signed = signed_at_head(&app).await;

    // The operator restores the copy, as docs/operations.md says: server stopped, file replaced (a new file: a connection
    // of the stopped app still open on the old one must not write into the copy).
    app.stop().await;
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{path}{suffix}"));
    }
    std::fs::copy(&backup, &path).unwrap();
    let app = app.restarted().await;
    match backend::services::audit_proof::signer(&app.state).alarm() {
        Some(SignerAlarm::HistoryChanged { seq, found: None, .. }) => assert_eq!(seq, signed),
        other => panic!("the events since the backup are missing: {other:?}"),
    }
    resolve(&app.state, TrueHistory::Database, "田中 健", "restored the backup after the disk failed").await.unwrap();
    assert_eq!(backend::services::audit_proof::signer(&app.state).alarm(), None);
    some_events(&app, &["d-user"]).await;
    assert!(checkpoint_head(&app.state).await.unwrap().is_some(), "signing goes on from the restored history");
    let _ = std::fs::remove_file(backup);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_rotation_carries_the_memory_over_and_raises_nothing() {
    let app = TestApp::spawn().await;
    some_events(&app, &["a-user"]).await;
    let vouched = signed_at_head(&app).await;
    // The old key and its memory as files, as an installation keeps them.
    let folder = std::env::temp_dir().join(format!("rerun-gate-keys-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&folder).unwrap();
    let old = folder.join("old.key");
    write_private(&old, crate::harness::audit_key().to_pem().as_bytes());
    write_private(&backend::audit_witness::path_for(&old), &std::fs::read(app.witness()).unwrap());
    let new = folder.join("new.key");
    let rotated = server(
        &["audit", "keygen", "--file", new.to_str().unwrap(), "--replaces", old.to_str().unwrap()],
        &app.database_url,
    );
    assert!(rotated.status.success(), "{}", text(&rotated));
    assert!(text(&rotated).contains("carries over"), "{}", text(&rotated));

    let key = std::sync::Arc::new(backend::audit_key::load(&new).unwrap());
    let memory = backend::audit_witness::path_for(&new);
    let app = app
        .restarted_with(|options| {
            options.audit_key = Some(key.clone());
            options.audit_witness = Some(memory.clone());
        })
        .await;
    assert_eq!(
        backend::services::audit_proof::signer(&app.state).alarm(),
        None,
        "the new key's signer remembers the old one's checkpoints"
    );
    some_events(&app, &["b-user"]).await;
    let next = checkpoint_head(&app.state).await.unwrap().expect("signed by the new key");
    assert!(next.seq > vouched);
    assert_eq!(next.key_id, key.public().key_id());
    let (code, said) = verify_with_witness(&app);
    assert_eq!(code, Some(0), "the old public key still proves the history, through the hand-over: {said}");
    let _ = std::fs::remove_dir_all(folder);
}

fn write_private(path: &std::path::Path, bytes: &[u8]) {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut file = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(path).unwrap();
    file.write_all(bytes).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_newest_checkpoint_reaches_the_auditors_as_a_signed_digest_once_a_period_when_the_chain_moved() {
    let app = TestApp::spawn().await;
    app.user("kansa", &["auditor"], &[]).await;
    some_events(&app, &["a-user"]).await;
    signed_at_head(&app).await;
    let hours = |h| chrono::Duration::hours(h);
    assert!(send_digest_if_due(&app.state).await.unwrap(), "the first digest goes out");
    assert!(!send_digest_if_due(&app.state).await.unwrap(), "not twice");
    some_events(&app, &["b-user"]).await;
    let moved = signed_at_head(&app).await;
    assert!(!send_digest_if_due(&app.state).await.unwrap(), "the chain moved, but within the period");
    app.clock.advance(hours(25));
    assert!(send_digest_if_due(&app.state).await.unwrap(), "a period later, the chain having moved");
    app.clock.advance(hours(25));
    assert!(!send_digest_if_due(&app.state).await.unwrap(), "a period later, the chain not having moved");
    assert_eq!(app.notifications_of("kansa", "audit_digest").await, 2);

    // The e-mail as the auditor saves it (quoted): `verify --checkpoints` reads the digest and checks it.
    let mut conn = app.db().connection().await.unwrap();
    let stored: String = match &mut conn {
        backend::db::Conn::Sqlite(c, _) => {
            sqlx::query_scalar("SELECT notice FROM notifications WHERE kind = 'audit_digest' ORDER BY id DESC LIMIT 1")
                .fetch_one(&mut **c)
                .await
        }
        backend::db::Conn::Postgres(c, _) => {
            sqlx::query_scalar("SELECT notice FROM notifications WHERE kind = 'audit_digest' ORDER BY id DESC LIMIT 1")
                .fetch_one(&mut **c)
                .await
        }
    }
    .unwrap();
    drop(conn);
    let notice = domain::notifications::Notice::from_stored(&stored).unwrap();
    let occasion =
        words::notifications::Occasion { department: "", at: app.state.clock.now(), url: "http://gate/audit" };
    let mail = words::notifications::mail_in(
        words::i18n::Locale::ja,
        domain::preferences::time_zone_or_default("Asia/Tokyo"),
        &notice,
        &occasion,
    );
    assert!(mail.text.contains(&format!("seq {moved}")), "{}", mail.text);
    let saved: String = mail.text.lines().map(|l| format!("> {l}\n")).collect();
    for (digests, expected) in
        [(saved.clone(), Some(0)), (saved.replace(&format!("seq {moved}"), &format!("seq {}", moved - 1)), Some(1))]
    {
        let file = std::env::temp_dir().join(format!("digest-{}.txt", uuid::Uuid::new_v4().simple()));
        std::fs::write(&file, digests).unwrap();
        let args = [
            "audit",
            "verify",
            "--public-key",
            public_key_file().to_str().unwrap(),
            "--checkpoints",
            file.to_str().unwrap(),
        ];
        let output = server(&args, &app.database_url);
        assert_eq!(output.status.code(), expected, "{}", text(&output));
        let _ = std::fs::remove_file(file);
    }
}
