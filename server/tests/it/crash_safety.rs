//! Crash safety (QUALITY 22): the server runs as a child process and is killed with SIGKILL at each fault
//! point of a dispatch — before the send, after the send but before it is marked sent, after the commit —
//! then restarted. The receiver, deduplicating on `webhook-id`, sees exactly one effect, and nothing approved
//! is lost.
use crate::fixtures::{approved_request, caller};
use crate::harness::{RERUN_SECRET, TestApp};
use axum::body::Bytes;
use axum::http::{HeaderMap, StatusCode};
use std::collections::HashSet;
use std::io::{BufRead, BufReader};
use std::process::{Child, Stdio};
use std::sync::{Arc, Mutex};

/// Deliveries (every POST) and effects (distinct webhook-ids).
#[derive(Clone, Default)]
pub struct Receiver {
    pub deliveries: Arc<Mutex<usize>>,
    pub effects: Arc<Mutex<HashSet<String>>>,
}

pub async fn receiver() -> (Receiver, String) {
    receiver_taking(std::time::Duration::ZERO).await
}

/// A receiver that takes `pause` to answer each delivery (so that work is still under way when a test acts).
pub async fn receiver_taking(pause: std::time::Duration) -> (Receiver, String) {
    let r = Receiver::default();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/rerun", listener.local_addr().unwrap());
    let handler = r.clone();
    let app = axum::Router::new().route(
        "/rerun",
        axum::routing::post(move |headers: HeaderMap, _body: Bytes| {
            let r = handler.clone();
            async move {
                tokio::time::sleep(pause).await;
                *r.deliveries.lock().unwrap() += 1;
                let id = headers.get("webhook-id").and_then(|v| v.to_str().ok()).unwrap_or_default().to_string();
                r.effects.lock().unwrap().insert(id);
                StatusCode::OK
            }
        }),
    );
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (r, url)
}

/// The server binary serving `database_url`; its address is the second value.
pub fn serve(database_url: &str, config: &std::path::Path, fault: Option<&str>) -> (Child, String) {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut command = crate::harness::server_command(env!("CARGO_BIN_EXE_server"));
    command
        .arg("serve")
        .env("DATABASE_URL", database_url)
        .env("RERUN_GATE_CONFIG", config)
        .env("LEPTOS_SITE_ADDR", format!("127.0.0.1:{port}"))
        .env("RERUN_GATE_SECRET_ORDER_INTAKE", RERUN_SECRET)
        // Short look-ups (see `config_sending_to`) and sends, so that a short lease covers them: 3 × 1 + 1 + 5.
        .env("RERUN_GATE_DISPATCH_TIMEOUT_SECONDS", "1")
        .env("RERUN_GATE_DISPATCH_LEASE_SECONDS", "9")
        .env("RERUN_GATE_SWEEP_SECONDS", "3600")
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    if let Some(fault) = fault {
        command.env("RERUN_GATE_FAULT_POINT", fault);
    }
    (command.spawn().expect("start the server binary"), format!("http://127.0.0.1:{port}"))
}

/// The example configuration with the workflows' reruns sent to `url`, as a file for a child server.
/// The app under test, configured from the same file as the child servers: an approval is bound to the
/// workflow's definition, so the instance that sends must know the one it was approved under.
pub async fn app_with(config: &std::path::Path) -> TestApp {
    TestApp::spawn_configured(|_| {}, server::startup::load_config(Some(config)).expect("a valid configuration")).await
}

pub fn config_sending_to(url: &str) -> std::path::PathBuf {
    let config = std::env::temp_dir().join(format!("rerun-gate-{}.toml", uuid::Uuid::new_v4().simple()));
    let example = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../rerun-gate.toml")).unwrap();
    let example = example.replace("kind = \"demo\"\n", "kind = \"demo\"\ntimeout_seconds = 1\n");
    std::fs::write(&config, example.replace("http://127.0.0.1:3000/demo/rerun", url)).unwrap();
    config
}

async fn request_status(app: &TestApp, id: &str) -> String {
    let mut tx = app.db().begin_read().await.unwrap();
    backend::db::rerun_requests::by_id(&mut tx, id).await.unwrap().unwrap().status.to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_at_each_fault_point_and_restarted_the_receiver_sees_exactly_one_effect_per_rerun() {
    for fault in ["before_send", "after_send", "after_commit"] {
        let (receiver, url) = receiver().await;
        let config = config_sending_to(&url);
        let app = app_with(&config).await;
        // The child server uses the real clock: the approval happens just before it starts.
        app.clock.set(chrono::Utc::now() - chrono::Duration::minutes(10));
        let token = app.token("intake", &["sales"]).await;
        app.user("sato", &["staff"], &["sales"]).await;
        app.user("suzuki", &["manager"], &["sales"]).await;
        let (staff, owner) = (caller(&app, "sato").await, caller(&app, "suzuki").await);
        let id = approved_request(&app, &token, &staff, &owner, &format!("ORD-{fault}")).await;

        let (mut first, _) = serve(&app.database_url, &config, Some(fault));
        let stderr = BufReader::new(first.stderr.take().unwrap());
        let reached =
            stderr.lines().map_while(Result::ok).any(|line| line.contains(&format!("fault point {fault} reached")));
        assert!(reached, "{fault}: the server never reached its fault point");
        first.kill().unwrap(); // SIGKILL
        first.wait().unwrap();

        let (mut second, _) = serve(&app.database_url, &config, None);
        let mut settled = String::new();
        for _ in 0..300 {
            settled = request_status(&app, &id).await;
            if settled == "dispatched" {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        second.kill().unwrap();
        second.wait().unwrap();
        let _ = std::fs::remove_file(&config);
        assert_eq!(settled, "dispatched", "{fault}: nothing approved is lost");
        assert_eq!(receiver.effects.lock().unwrap().len(), 1, "{fault}: exactly one effect");
        let deliveries = *receiver.deliveries.lock().unwrap();
        let expected = if fault == "after_send" { 2 } else { 1 };
        assert_eq!(deliveries, expected, "{fault}: deliveries (the receiver deduplicates the repeat)");
    }
}

/// Closing the database closes every file of it: the pool's connections and the group commit's own (SQLite). One
/// left open once wrote over a restored backup's write-ahead log (docs/operations.md, restoring a backup).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_closed_database_keeps_none_of_its_files_open() {
    let app = TestApp::spawn().await;
    let Some(file) = app.database_file() else {
        return; // PostgreSQL: no file of ours
    };
    let token = app.token("intake", &["sales"]).await;
    // A step event takes the group commit's path, which keeps a connection of its own.
    crate::fixtures::stalled(&app, &token, "ORD-CLOSE").await;
    assert!(app.open_database_files() > 0, "the app has its database open");
    app.stop().await; // fails when a file stays open
    assert_eq!(app.open_database_files(), 0, "after close, no file of {file} is open");
}

/// The same while its connections are in use and writes wait for their turn: sqlx 0.8's `Pool::close` can return
/// with a connection still open (launchbadge/sqlx#3217), and a grouped write waiting for the writer could open
/// the writer's connection again after it was closed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_closed_while_busy_keeps_none_of_its_files_open() {
    for round in 0..8 {
        let app = TestApp::spawn().await;
        if app.database_file().is_none() {
            return; // PostgreSQL: no file of ours
        }
        let token = app.token("intake", &["sales"]).await;
        let readers = (0..12).map(|n| {
            let db = app.state.pools()[n % 3].clone();
            tokio::spawn(async move {
                loop {
                    let Ok(mut conn) = db.connection().await else { break };
                    let read = backend::db::audit::head(&mut conn).await;
                    drop(conn);
                    if read.is_err() {
                        break;
                    }
                }
            })
        });
        let writers = (0..4).map(|writer| {
            let (http, url, token) = (app.http.clone(), app.url.clone(), token.clone());
            tokio::spawn(async move {
                for n in 0.. {
                    let process_id = format!("ORD-BUSY-{round}-{writer}-{n}");
                    let body = serde_json::json!({"process_id": process_id, "workflow": "order-intake",
                        "department": "sales", "steps": [{"name": "register_order", "idempotency_key": process_id}]});
                    let sent = http.post(format!("{url}/api/v1/operations")).bearer_auth(&token);
                    let sent = sent.header("idempotency-key", &process_id).json(&body).send();
                    if !sent.await.is_ok_and(|answer| answer.status().is_success()) {
                        break;
                    }
                }
            })
        });
        let busy: Vec<_> = readers.chain(writers).collect();
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        app.stop().await; // fails when a file stays open
        for task in busy {
            task.await.unwrap();
        }
    }
}
