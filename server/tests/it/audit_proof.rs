//! Signed checkpoints: what proves the history to someone who does not trust whoever runs the database.
use crate::audit_trail::raw;
use crate::harness::{PASSWORD, TestApp, audit_key, public_key_file};
use backend::Db;
use backend::services::audit::{Proof, Verification, verify, verify_with};
use backend::services::audit_proof::checkpoint_head;
use domain::audit::AuditEvent;
use std::process::{Command, Output};

pub(crate) fn server(args: &[&str], database_url: &str) -> Output {
    Command::new(env!("CARGO_BIN_EXE_server"))
        .args(args)
        .env("DATABASE_URL", database_url)
        .envs(crate::harness::migrate_url(database_url).map(|url| ("RERUN_GATE_MIGRATE_URL", url)))
        .env("RERUN_GATE_CONFIG", concat!(env!("CARGO_MANIFEST_DIR"), "/../rerun-gate.toml"))
        .env("RUST_LOG", "warn")
        .output()
        .expect("start the server binary")
}

pub(crate) fn text(output: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr))
}

fn file_with(contents: &str, extension: &str) -> std::path::PathBuf {
    let path = std::env::temp_dir().join(format!("audit-{}.{extension}", uuid::Uuid::new_v4().simple()));
    std::fs::write(&path, contents).unwrap();
    path
}

/// Checks an export offline with the public key (and checkpoints kept from earlier exports).
fn verify_offline(export: &str, kept: &[&std::path::Path]) -> (Option<i32>, String) {
    let file = file_with(export, "jsonl");
    let mut args = vec!["audit", "verify", "--file", file.to_str().unwrap()];
    args.extend(["--public-key", public_key_file().to_str().unwrap()]);
    for kept in kept {
        args.extend(["--checkpoints", kept.to_str().unwrap()]);
    }
    let output = server(&args, "sqlite://unused-by-an-offline-check.db");
    let _ = std::fs::remove_file(&file);
    (output.status.code(), text(&output))
}

async fn export_as_auditor(app: &TestApp, format: &str) -> String {
    let cookie = app.sign_in("kansa", PASSWORD).await;
    let (status, _, body) = crate::audit_exports::download(app, &format!("format={format}"), Some(&cookie)).await;
    assert!(status.is_success(), "{body}");
    body
}

fn proof() -> Proof {
    Proof { public_key: audit_key().public(), kept: Vec::new() }
}

/// What someone with full access to the database can do: rewrite event `seq` and recompute every later hash
/// and the head, so that the chain alone links perfectly.
pub(crate) async fn forge(db: &Db, seq: i64) {
    let mut conn = db.connection().await.unwrap();
    let events: Vec<AuditEvent> = backend::db::audit::page_after(&mut conn, seq - 1, 100_000).await.unwrap();
    drop(conn);
    let mut statements = vec![match db {
        Db::Sqlite(..) => "DROP TRIGGER audit_events_no_update".to_string(),
        Db::Postgres(..) => "ALTER TABLE audit_events DISABLE TRIGGER USER".to_string(),
    }];
    let mut prev_hash = events[0].prev_hash.clone();
    for mut event in events {
        if event.seq == seq {
            event.reason = Some("nothing happened here".into());
        }
        event.prev_hash = prev_hash;
        event.hash = event.expected_hash();
        statements.push(format!(
            "UPDATE audit_events SET reason = {}, prev_hash = '{}', hash = '{}' WHERE seq = {}",
            event.reason.as_ref().map_or("NULL".to_string(), |r| format!("'{r}'")),
            event.prev_hash,
            event.hash,
            event.seq
        ));
        statements.push(format!("UPDATE audit_head SET seq = {}, hash = '{}' WHERE id = 1", event.seq, event.hash));
        prev_hash = event.hash;
    }
    if let Db::Postgres(..) = db {
        statements.push("ALTER TABLE audit_events ENABLE TRIGGER USER".into()); // leaving no trace
    }
    for statement in statements {
        raw(db, &statement).await.unwrap();
    }
}

/// And then removes the signed checkpoints that would betray it.
pub(crate) async fn remove_checkpoints(db: &Db) {
    let statements = match db {
        Db::Sqlite(..) => {
            vec!["DROP TRIGGER audit_signed_checkpoints_no_delete", "DELETE FROM audit_signed_checkpoints"]
        }
        Db::Postgres(..) => {
            vec![
                "ALTER TABLE audit_signed_checkpoints DISABLE TRIGGER USER",
                "DELETE FROM audit_signed_checkpoints",
                "ALTER TABLE audit_signed_checkpoints ENABLE TRIGGER USER", // leaving no trace
            ]
        }
    };
    for statement in statements {
        raw(db, statement).await.unwrap();
    }
}

pub(crate) async fn some_events(app: &TestApp, names: &[&str]) {
    for name in names {
        app.user(name, &["staff"], &["sales"]).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_perfect_forgery_inside_the_database_is_named_by_the_signed_checkpoints_online_and_offline() {
    let app = TestApp::spawn().await;
    app.user("kansa", &["auditor"], &[]).await;
    some_events(&app, &["a-user", "b-user", "c-user"]).await;
    let first = checkpoint_head(&app.state).await.unwrap().expect("a key is configured");
    let kept = file_with(&export_as_auditor(&app, "jsonl").await, "jsonl");
    some_events(&app, &["d-user", "e-user"]).await;
    checkpoint_head(&app.state).await.unwrap().expect("new events");

    forge(app.db(), 2).await;
    assert!(matches!(verify(app.db()).await.unwrap(), Verification::Intact { .. }), "the chain alone cannot tell");
    match verify_with(app.db(), Some(proof())).await.unwrap() {
        Verification::Unproven(problem) => assert_eq!(problem.seq(), first.seq, "{problem}"),
        other => panic!("the forgery went unseen: {other:?}"),
    }
    let public_key = public_key_file().to_str().unwrap();
    let online = server(&["audit", "verify", "--public-key", public_key], &app.database_url);
    assert_eq!(online.status.code(), Some(1), "{}", text(&online));
    assert!(text(&online).contains(&format!("sequence number {}:", first.seq)), "{}", text(&online));

    // Whoever rewrote history also removes the checkpoints: the ones an auditor kept still name it.
    remove_checkpoints(app.db()).await;
    let kept_proof = Proof {
        kept: domain::audit_proof::ExportProof::kept_from(
            std::fs::read_to_string(&kept).unwrap().lines().map(str::to_string),
        ),
        ..proof()
    };
    match verify_with(app.db(), Some(kept_proof)).await.unwrap() {
        Verification::Unproven(problem) => assert_eq!(problem.seq(), first.seq, "{problem}"),
        other => panic!("the forgery went unseen: {other:?}"),
    }
    // An export taken now, checked against the one kept from before, names the same event.
    let after = export_as_auditor(&app, "jsonl").await;
    let (code, said) = verify_offline(&after, &[&kept]);
    assert_eq!(code, Some(1), "{said}");
    assert!(said.contains(&format!("event {} no longer matches", first.seq)), "{said}");
    // Alone it proves nothing either: the signer never vouches for the rewritten events (on PostgreSQL it
    // refuses to sign; SQLite's writer still appends after the head it remembers, which breaks the link).
    let (code, said) = verify_offline(&after, &[]);
    assert_eq!(code, Some(1), "{said}");
    let _ = std::fs::remove_file(&kept);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_export_carries_the_checkpoint_at_its_head_and_verifies_with_only_the_public_key() {
    let app = TestApp::spawn().await;
    app.user("kansa", &["auditor"], &[]).await;
    some_events(&app, &["a-user", "b-user"]).await;
    checkpoint_head(&app.state).await.unwrap();
    some_events(&app, &["c-user"]).await;
    let export = export_as_auditor(&app, "jsonl").await;
    let lines: Vec<serde_json::Value> = export.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let checkpoints: Vec<&serde_json::Value> = lines.iter().filter_map(|l| l.get("checkpoint")).collect();
    let trailer = &lines.last().unwrap()["trailer"];
    assert_eq!(checkpoints.len(), 2, "the earlier checkpoint and the one signed as the export began");
    assert_eq!(checkpoints[1]["seq"], trailer["head_seq"]);
    assert_eq!(checkpoints[1]["hash"], trailer["head_hash"]);

    let (code, said) = verify_offline(&export, &[]);
    assert_eq!(code, Some(0), "{said}");
    assert!(said.contains("signed checkpoints matched: 2"), "{said}");
    let python = python_check(&export);
    assert_eq!(python.status.code(), Some(0), "{}", text(&python));
    assert!(text(&python).contains("checkpoints ok: 2"), "{}", text(&python));

    // A checkpoint moved to another event no longer carries a valid signature, for either check.
    let moved = export.replacen(&format!("\"seq\":{}", checkpoints[0]["seq"]), "\"seq\":1", 1);
    let (code, said) = verify_offline(&moved, &[]);
    assert_eq!(code, Some(1), "{said}");
    assert!(said.contains("not signed by a trusted key"), "{said}");
    assert_ne!(python_check(&moved).status.code(), Some(0));

    let csv = export_as_auditor(&app, "csv").await;
    assert!(csv.lines().nth(1).unwrap().starts_with("# checkpoint,"), "the proof comes right after the header");
}

/// The security guide's Python check of the checkpoints, run as written there.
fn python_check(export: &str) -> Output {
    let export = file_with(export, "jsonl");
    let output = crate::harness::guide_script("checkpoints ok", &[&export, public_key_file()]);
    let _ = std::fs::remove_file(export);
    output
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn checkpoints_of_a_replaced_key_still_prove_once_the_new_key_names_it() {
    let app = TestApp::spawn().await;
    some_events(&app, &["a-user"]).await;
    checkpoint_head(&app.state).await.unwrap().expect("signed by the suite's key");
    let new = domain::audit_proof::AuditKey::generate();
    let old = audit_key().public();
    let (seq, hash) = backend::db::audit::head(&mut app.db().connection().await.unwrap()).await.unwrap();
    let by_new = new.sign(seq, &hash, None, app.state.clock.now());
    let mut tx = app.db().begin_write().await.unwrap();
    backend::db::audit_proof::insert_checkpoint(&mut tx, &by_new).await.unwrap();
    tx.commit().await.unwrap();
    let trusting_new = || Some(Proof { public_key: new.public(), kept: Vec::new() });
    assert!(matches!(verify_with(app.db(), trusting_new()).await.unwrap(), Verification::Unproven(_)), "not yet named");

    backend::services::audit_proof::record_succession(&app.state, &new, &old, Some(audit_key()), None).await.unwrap();
    match verify_with(app.db(), trusting_new()).await.unwrap() {
        Verification::Proven { proof, .. } => assert_eq!(proof.matched, 2),
        other => panic!("{other:?}"),
    }
    match verify_with(app.db(), Some(proof())).await.unwrap() {
        Verification::Proven { proof, .. } => assert_eq!(proof.matched, 2, "the old key handed over"),
        other => panic!("{other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keygen_writes_a_key_only_its_owner_reads_never_replaces_it_and_public_key_prints_its_half() {
    use std::os::unix::fs::PermissionsExt;
    let folder = std::env::temp_dir().join(format!("rg-keygen-{}", uuid::Uuid::new_v4().simple()));
    let file = folder.join("audit.key");
    let file_arg = file.to_str().unwrap();
    let made = server(&["audit", "keygen", "--file", file_arg], "sqlite://unused-by-keygen.db");
    assert_eq!(made.status.code(), Some(0), "{}", text(&made));
    assert_eq!(std::fs::metadata(&file).unwrap().permissions().mode() & 0o777, 0o600);
    let printed = String::from_utf8_lossy(&made.stdout).into_owned();
    assert!(printed.starts_with("-----BEGIN PUBLIC KEY-----"), "{printed}");
    let public = server(&["audit", "public-key", "--file", file_arg], "sqlite://unused-by-keygen.db");
    assert_eq!(String::from_utf8_lossy(&public.stdout), printed);
    let again = server(&["audit", "keygen", "--file", file_arg], "sqlite://unused-by-keygen.db");
    assert_ne!(again.status.code(), Some(0));
    assert!(text(&again).contains("never replaced"), "{}", text(&again));
    std::fs::remove_dir_all(&folder).unwrap();
}

/// SQLite has no roles (one file, one process: the signed checkpoints are what protects it); on PostgreSQL the
/// app serves as a role that may append to and read the trail, and nothing more.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_apps_postgresql_role_cannot_rewrite_unprotect_or_restructure_the_audit_trail() {
    let app = TestApp::spawn().await;
    let Db::Postgres(pool, ..) = app.db() else { return };
    some_events(&app, &["a-user", "b-user"]).await;
    checkpoint_head(&app.state).await.unwrap().expect("the app's role appends checkpoints");
    let role: String = sqlx::query_scalar("SELECT current_user").fetch_one(pool).await.unwrap();
    assert_eq!(role, crate::harness::PG_RUNTIME);
    let mut attacks = vec![
        "CREATE TABLE shadow (x int)".to_string(),
        "UPDATE _sqlx_migrations SET description = 'x'".to_string(),
        "DROP FUNCTION append_only() CASCADE".to_string(),
        "DROP FUNCTION audit_events_append_only() CASCADE".to_string(),
        "DROP TRIGGER audit_events_no_update_or_delete ON audit_events".to_string(),
        "DROP TRIGGER audit_signed_checkpoints_append_only ON audit_signed_checkpoints".to_string(),
    ];
    for table in ["audit_events", "audit_signed_checkpoints", "audit_key_statements"] {
        attacks.extend([
            format!("UPDATE {table} SET at = at"),
            format!("DELETE FROM {table}"),
            format!("TRUNCATE {table}"),
            format!("ALTER TABLE {table} DISABLE TRIGGER USER"),
            format!("ALTER TABLE {table} ADD COLUMN note text"),
            format!("ALTER TABLE {table} OWNER TO {}", crate::harness::PG_RUNTIME),
            format!("DROP TABLE {table}"),
        ]);
    }
    for attack in &attacks {
        let error = sqlx::query(attack).execute(pool).await.expect_err(attack);
        let code = error.as_database_error().and_then(|e| e.code()).map(|c| c.to_string());
        assert_eq!(code.as_deref(), Some("42501"), "{attack}: refused for want of the right, not by chance: {error}");
    }
    assert!(matches!(verify(app.db()).await.unwrap(), Verification::Intact { .. }));
}

/// The local time-stamping authority (scripts/local-tsa.py: Debian's `openssl ts` behind a small HTTP server),
/// with its throw-away CA under target/; stopped when dropped.
struct LocalAuthority {
    child: std::process::Child,
    folder: std::path::PathBuf,
    url: String,
}

impl LocalAuthority {
    fn start() -> LocalAuthority {
        use std::io::BufRead;
        let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
        let folder = std::path::Path::new(root).join(format!("target/tsa-{}", uuid::Uuid::new_v4().simple()));
        let mut child = Command::new("python3")
            .arg(format!("{root}/scripts/local-tsa.py"))
            .arg(&folder)
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("python3 runs the local time-stamping authority");
        let mut ready = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap()).read_line(&mut ready).unwrap();
        let port = ready.trim().strip_prefix("listening on ").expect("the authority says where it listens");
        LocalAuthority { child, url: format!("http://127.0.0.1:{port}/"), folder }
    }
}

impl Drop for LocalAuthority {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.folder);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_checkpoint_is_time_stamped_by_the_configured_authority_and_openssl_verifies_the_stamp() {
    use base64::Engine;
    let authority = LocalAuthority::start();
    let mut config = crate::harness::example_config();
    config.audit.timestamp_url = Some(authority.url.clone());
    config.audit.timestamp_allow_loopback = true; // a real authority is never on loopback: the guard refuses it
    let app = TestApp::spawn_configured(|_| {}, config).await;
    app.user("kansa", &["auditor"], &[]).await;
    let checkpoint = checkpoint_head(&app.state).await.unwrap().expect("signed");
    let stamp =
        base64::engine::general_purpose::STANDARD.decode(checkpoint.timestamp.as_ref().expect("stamped")).unwrap();

    let answer = std::env::temp_dir().join(format!("stamp-{}.tsr", uuid::Uuid::new_v4().simple()));
    std::fs::write(&answer, stamp).unwrap();
    let ca = authority.folder.join("ca.pem");
    let openssl_verifies = |signed: &str| {
        let data = file_with(signed, "txt");
        let verified = Command::new("openssl")
            .args(["ts", "-verify", "-data", data.to_str().unwrap(), "-in", answer.to_str().unwrap()])
            .args(["-CAfile", ca.to_str().unwrap()])
            .output()
            .unwrap();
        let _ = std::fs::remove_file(data);
        text(&verified)
    };
    let said = openssl_verifies(&checkpoint.message());
    assert!(said.contains("Verification: OK"), "{said}");
    let said = openssl_verifies(&checkpoint.message().replace("seq ", "seq 9"));
    assert!(!said.contains("Verification: OK"), "the stamp is for that text only: {said}");

    let export = export_as_auditor(&app, "jsonl").await;
    let first: serde_json::Value = serde_json::from_str(export.lines().next().unwrap()).unwrap();
    assert!(first["checkpoint"]["timestamp"].is_string(), "exports carry the stamps: {first}");
    let _ = std::fs::remove_file(answer);
}
