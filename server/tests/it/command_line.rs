//! The `server` binary's commands, run as a separate process against the test database.
use crate::harness::{TestApp, fresh_database_url};
use std::io::Write;
use std::process::{Output, Stdio};

fn server(database_url: &str, args: &[&str], stdin: &str) -> Output {
    server_configured(concat!(env!("CARGO_MANIFEST_DIR"), "/../rerun-gate.toml").as_ref(), database_url, args, stdin)
}

/// The shipped configuration with a company sign-in added (the directory provisions only where there is one).
fn with_company_sign_in() -> std::path::PathBuf {
    let shipped = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../rerun-gate.toml")).unwrap();
    let oidc = "\n[sign_in.oidc]\nissuer = \"https://login.example.jp\"\nclient_id = \"rerun-gate\"\n\n\
                [[sign_in.oidc.group]]\ngroup = \"sales-approvers\"\nroles = [\"manager\"]\ndepartments = [\"sales\"]\n";
    let path = std::env::temp_dir().join(format!("rerun-gate-oidc-{}.toml", uuid::Uuid::new_v4()));
    std::fs::write(&path, format!("{shipped}{oidc}")).unwrap();
    path
}

fn server_configured(config: &std::path::Path, database_url: &str, args: &[&str], stdin: &str) -> Output {
    let mut child = crate::harness::server_command(env!("CARGO_BIN_EXE_server"))
        .args(args)
        .env("DATABASE_URL", database_url)
        .envs(crate::harness::migrate_url(database_url).map(|url| ("RERUN_GATE_MIGRATE_URL", url)))
        .env("RERUN_GATE_CONFIG", config)
        .env("RUST_LOG", "warn")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the server binary");
    child.stdin.take().unwrap().write_all(stdin.as_bytes()).unwrap();
    child.wait_with_output().unwrap()
}

fn text(output: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn audit_verify_exits_zero_on_an_intact_chain_and_one_naming_the_first_bad_event() {
    let app = TestApp::spawn().await;
    for name in ["a-user", "b-user", "c-user", "d-user"] {
        app.user(name, &["auditor"], &[]).await;
    }
    let ok = server(&app.database_url, &["audit", "verify"], "");
    assert_eq!(ok.status.code(), Some(0), "{}", text(&ok));
    let events = app.audit_actions().await.len();
    assert!(text(&ok).contains(&format!("intact: {events} events")), "{}", text(&ok));

    crate::audit_trail::tamper(app.db(), "UPDATE audit_events SET actor_label = 'someone-else' WHERE seq = 3").await;
    let broken = server(&app.database_url, &["audit", "verify"], "");
    assert_eq!(broken.status.code(), Some(1), "{}", text(&broken));
    assert!(text(&broken).contains("sequence number 3"), "{}", text(&broken));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn user_add_reads_the_password_from_stdin_and_the_user_can_sign_in() {
    let app = TestApp::spawn().await;
    let added = server(
        &app.database_url,
        &[
            "user",
            "add",
            "--username",
            "mori",
            "--display-name",
            "森 さくら",
            "--role",
            "manager",
            "--department",
            "sales",
            "--password-stdin",
        ],
        "sakura-no-kisetsu\n",
    );
    assert_eq!(added.status.code(), Some(0), "{}", text(&added));
    app.sign_in("mori", "sakura-no-kisetsu").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn user_add_gives_roles_in_departments_with_member_and_refuses_an_organisation_role_as_one() {
    use domain::rights::Act;
    let app = TestApp::spawn().await;
    let args = ["user", "add", "--username", "kudo", "--display-name", "工藤 亮", "--member", "sales:staff"];
    let added = server(
        &app.database_url,
        &[&args[..], &["--member", "billing:manager", "--password-stdin"]].concat(),
        "kumo-no-ue-no-sora\n",
    );
    assert_eq!(added.status.code(), Some(0), "{}", text(&added));
    let kudo = crate::fixtures::caller(&app, "kudo").await.person();
    assert!(kudo.may_act(Act::Decide, "billing") && !kudo.may_act(Act::Decide, "sales"), "manager there, staff here");
    assert!(kudo.may_act(Act::RequestRerun, "sales"));

    let wrong =
        ["user", "add", "--username", "y", "--display-name", "Y", "--member", "sales:admin", "--password-stdin"];
    let refused = server(&app.database_url, &wrong, "kumo-no-ue-no-sora\n");
    assert_eq!(refused.status.code(), Some(2), "{}", text(&refused));
    assert!(text(&refused).contains("--role admin"), "{}", text(&refused));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn user_add_refuses_a_weak_password_with_a_clear_message() {
    let url = fresh_database_url().await;
    let refused = server(
        &url,
        &["user", "add", "--username", "x", "--display-name", "X", "--role", "auditor", "--password-stdin"],
        "12345678\n",
    );
    assert_eq!(refused.status.code(), Some(2));
    assert!(text(&refused).contains("too common"), "{}", text(&refused));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn demo_load_fills_an_empty_database_once_and_prints_one_time_passwords() {
    let url = fresh_database_url().await;
    let first = server(&url, &["demo", "load"], "");
    assert_eq!(first.status.code(), Some(0), "{}", text(&first));
    let out = text(&first);
    for user in ["sato", "suzuki", "takahashi", "tanaka", "admin"] {
        assert!(out.contains(user), "{user} missing: {out}");
    }
    let second = server(&url, &["demo", "load"], "");
    assert!(text(&second).contains("not loaded"), "{}", text(&second));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn migrate_on_a_fresh_database_succeeds_twice() {
    let url = fresh_database_url().await;
    for _ in 0..2 {
        let out = server(&url, &["migrate"], "");
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scim_token_create_prints_the_directory_s_own_token_once_and_revoke_ends_it() {
    let config = crate::directory::with_directory(crate::harness::example_config());
    let app = TestApp::spawn_configured(|_| {}, config).await;
    let refused = server(&app.database_url, &["scim", "token", "create", "--name", "entra"], "");
    assert_ne!(refused.status.code(), Some(0), "no company sign-in in the shipped file: nobody to provision");
    assert!(text(&refused).contains("configure [sign_in.oidc]"), "{}", text(&refused));
    let configured = with_company_sign_in();
    let server = |url: &str, args: &[&str], stdin: &str| server_configured(&configured, url, args, stdin);
    let created = server(&app.database_url, &["scim", "token", "create", "--name", "entra"], "");
    assert_eq!(created.status.code(), Some(0), "{}", text(&created));
    let token = String::from_utf8_lossy(&created.stdout).trim().to_string();
    let get = |path: &str| app.http.get(format!("{}{path}", app.url)).bearer_auth(&token).send();
    assert_eq!(get("/scim/v2/Users").await.unwrap().status(), reqwest::StatusCode::OK);
    let ingestion = get("/api/v1/operations/nothing-here").await.unwrap().status();
    assert_eq!(ingestion, reqwest::StatusCode::UNAUTHORIZED, "the directory's token registers no operations");

    let second = server(&app.database_url, &["scim", "token", "create", "--name", "okta"], "");
    let second = String::from_utf8_lossy(&second.stdout).trim().to_string();
    let revoked = server(&app.database_url, &["scim", "token", "revoke", "--name", "okta"], "");
    assert_eq!(revoked.status.code(), Some(0), "{}", text(&revoked));
    let answer = app.http.get(format!("{}/scim/v2/Users", app.url)).bearer_auth(&second).send().await.unwrap();
    assert_eq!(answer.status(), reqwest::StatusCode::UNAUTHORIZED);
    let unknown = server(&app.database_url, &["scim", "token", "revoke", "--name", "nobody"], "");
    assert_eq!(unknown.status.code(), Some(2), "{}", text(&unknown));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn token_create_prints_a_token_once_that_the_api_accepts() {
    let app = TestApp::spawn().await;
    let created =
        server(&app.database_url, &["token", "create", "--name", "order-intake", "--department", "sales"], "");
    assert_eq!(created.status.code(), Some(0), "{}", text(&created));
    let token = String::from_utf8_lossy(&created.stdout).trim().to_string();
    assert!(token.starts_with("rg_") && token.len() >= 40, "{token}");
    let answer =
        app.http.get(format!("{}/api/v1/operations/nothing-here", app.url)).bearer_auth(&token).send().await.unwrap();
    assert_eq!(answer.status(), reqwest::StatusCode::NOT_FOUND);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broken_configuration_stops_the_start_naming_file_line_and_problem() {
    let dir = std::env::temp_dir().join(format!("rg-config-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("broken.toml");
    let text_of_file = r#"[[department]]
code = "sales"
name = "営業部"

[[workflow]]
name = "x"
department = "legal"
rerun_url = "https://example.com/rerun"
signing_secret_env = "X_SECRET"
[[workflow.step]]
name = "a"
side_effect = false
"#;
    std::fs::write(&path, text_of_file).unwrap();
    let url = fresh_database_url().await;
    let output = crate::harness::server_command(env!("CARGO_BIN_EXE_server"))
        .args(["migrate"])
        .env("DATABASE_URL", &url)
        .envs(crate::harness::migrate_url(&url).map(|url| ("RERUN_GATE_MIGRATE_URL", url)))
        .env("RERUN_GATE_CONFIG", &path)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let message = text(&output);
    assert!(message.contains("broken.toml:7:14: unknown department 'legal'"), "{message}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_with_demo_as_make_run_does_prints_the_demo_users_and_serves_the_sign_in_page() {
    use std::io::BufRead;
    let url = fresh_database_url().await;
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut child = crate::harness::server_command(env!("CARGO_BIN_EXE_server"))
        .args(["serve", "--demo"])
        .env("DATABASE_URL", &url)
        .envs(crate::harness::migrate_url(&url).map(|url| ("RERUN_GATE_MIGRATE_URL", url)))
        .env("RERUN_GATE_CONFIG", concat!(env!("CARGO_MANIFEST_DIR"), "/../rerun-gate.toml"))
        .env("LEPTOS_SITE_ADDR", format!("127.0.0.1:{port}"))
        .env("RUST_LOG", "warn")
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut printed = String::new();
    for line in std::io::BufReader::new(child.stdout.take().unwrap()).lines() {
        let line = line.unwrap();
        printed.push_str(&line);
        printed.push('\n');
        if line.contains("serving on") {
            break;
        }
    }
    let page = reqwest::get(format!("http://127.0.0.1:{port}/")).await.unwrap().text().await.unwrap();
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(printed.contains("one-time passwords") && printed.contains("takahashi"), "{printed}");
    assert!(page.contains(r#"action="/api/sign_in""#) && page.contains("/pkg/rerun-gate."), "{page}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backup_taken_while_the_app_runs_restores_with_its_data_and_an_intact_audit_chain() {
    let app = TestApp::spawn().await;
    app.user("sato", &["staff"], &["sales"]).await;
    let token = app.token("intake", &["sales"]).await;
    let body = serde_json::json!({"process_id": "ORD-BK", "workflow": "order-intake", "department": "sales",
        "steps": [{"name": "register_order", "idempotency_key": "bk-r"}, {"name": "ai_summary", "idempotency_key": "bk-s"}]});
    app.api(reqwest::Method::POST, "/api/v1/operations", &token, Some("bk"), Some(&body)).await;
    let file =
        std::env::temp_dir().join("rerun-gate-tests").join(format!("backup-{}.db", uuid::Uuid::new_v4().simple()));
    let target = file.display().to_string();

    let taken = server(&app.database_url, &["backup", "--to", &target], "");
    if app.db().engine() == "postgres" {
        assert_eq!(taken.status.code(), Some(2), "{}", text(&taken));
        assert!(text(&taken).contains("pg_dump"), "{}", text(&taken));
        return;
    }
    assert_eq!(taken.status.code(), Some(0), "{}", text(&taken));
    let events_then = app.audit_actions().await.len() - 1; // the live trail also records the backup itself
    assert!(text(&taken).contains(&format!("audit chain intact: {events_then} events")), "{}", text(&taken));
    assert_eq!(app.audit_actions().await.last().map(String::as_str), Some("database.backed_up"));
    let again = server(&app.database_url, &["backup", "--to", &target], "");
    assert_eq!(again.status.code(), Some(2), "a backup never overwrites: {}", text(&again));

    // Restored: the copy is a database of its own, with the operation and a trail that verifies.
    let restored = format!("sqlite://{target}?mode=rwc");
    let verified = server(&restored, &["audit", "verify"], "");
    assert_eq!(verified.status.code(), Some(0), "{}", text(&verified));
    assert!(text(&verified).contains(&format!("intact: {events_then} events")), "{}", text(&verified));
    let db = backend::Db::connect(&restored).await.unwrap();
    let operation =
        backend::db::operations::by_process_id(&mut db.begin_read().await.unwrap(), "ORD-BK").await.unwrap();
    assert_eq!(operation.map(|o| o.department), Some("sales".to_string()));
    db.close().await;
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{target}{suffix}"));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_refuses_to_start_with_a_dispatch_lease_shorter_than_the_work_it_covers() {
    let url = fresh_database_url().await;
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut child = crate::harness::server_command(env!("CARGO_BIN_EXE_server"))
        .args(["serve"])
        .env("DATABASE_URL", &url)
        .envs(crate::harness::migrate_url(&url).map(|url| ("RERUN_GATE_MIGRATE_URL", url)))
        .env("RERUN_GATE_CONFIG", concat!(env!("CARGO_MANIFEST_DIR"), "/../rerun-gate.toml"))
        .env("RERUN_GATE_DISPATCH_LEASE_SECONDS", "15")
        .env("LEPTOS_SITE_ADDR", format!("127.0.0.1:{port}"))
        .env("RUST_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the server binary");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > deadline {
            child.kill().unwrap();
            panic!("serve started with a lease shorter than a look-up and a send");
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    for named in ["RERUN_GATE_DISPATCH_LEASE_SECONDS is 15 s", "look-up timeouts of workflow", "send timeout (10 s)"] {
        assert!(text(&output).contains(named), "{named} missing from: {}", text(&output));
    }
}
