//! QUALITY 35 (issue 61): under load the server is slower but never stopped. No request holds a pooled connection
//! while it asks for another (the policy table walked against pools of one connection); the audit page under
//! more parallel readers than its pool has connections; a saturated server answers 503 with `Retry-After` at once
//! and serves again when the load is gone.
use crate::harness::{PASSWORD, TestApp, server_process, server_troubles, sign_in_at};
use crate::policy::{Callers, call, concrete};
use app::api::policy::POLICY;
use domain::access::{CallerKind, Entry};
use domain::roles::Role;
use reqwest::StatusCode;

/// Pools of one connection each, and an acquire that gives up after 2 s: a path that holds a connection while it
/// asks for another waits for itself, and the log says "pool timed out".
const ONE_CONNECTION_EACH: [(&str, &str); 4] = [
    ("RERUN_GATE_DB_WORK_CONNECTIONS", "1"),
    ("RERUN_GATE_DB_PAGE_CONNECTIONS", "1"),
    ("RERUN_GATE_DB_EXPORT_CONNECTIONS", "1"),
    ("RERUN_GATE_DB_ACQUIRE_TIMEOUT_SECONDS", "2"),
];

/// A server process of its own on the test's database (its log in a file), with the demo's operations and a user
/// of each role signed in there, and an API token.
struct Served {
    /// Holds the database (removed when it goes).
    _app: TestApp,
    server: std::process::Child,
    url: String,
    log: std::path::PathBuf,
    callers: Callers,
    process_id: String,
}

impl Served {
    async fn start(env: &[(&str, &str)]) -> Served {
        let app = TestApp::spawn().await;
        backend::demo::load_if_empty(&app.state).await.unwrap().expect("an empty database");
        for role in Role::ALL {
            app.user(&format!("load-{role}"), &[role.as_str()], &["sales"]).await;
        }
        let token = app.token("load", &["sales"]).await;
        let log = std::env::temp_dir().join(format!("rerun-gate-overload-{}.log", uuid::Uuid::new_v4().simple()));
        let config = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../rerun-gate.toml"));
        let (server, url) = server_process(&app.database_url, config, env, Some(&log)).await;
        let http = reqwest::Client::new();
        let mut cookies = Vec::new();
        for role in Role::ALL {
            cookies.push((role, sign_in_at(&http, &url, &format!("load-{role}"), PASSWORD).await));
        }
        let process_id = crate::soak::demo_operations(&app).await.into_iter().next().expect("a demo operation");
        Served { _app: app, server, url, log, callers: Callers { cookies, token }, process_id }
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.server.kill();
        let _ = self.server.wait();
        let _ = std::fs::remove_file(&self.log);
    }
}

/// Each route with an object of the demo where it takes a process ID, and with the placeholders otherwise.
fn routes(process_id: &str) -> Vec<(&'static Entry, String)> {
    let mut entries: Vec<&Entry> = POLICY.iter().collect();
    // Signing out ends the session the other calls use: last.
    entries.sort_by_key(|e| e.path == "/api/sign_out");
    entries.into_iter().map(|e| (e, concrete(&e.path.replace("{process_id}", process_id)))).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_route_holds_a_connection_while_it_asks_for_another() {
    let served = Served::start(&ONE_CONNECTION_EACH).await;
    let http = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    let mut stuck = Vec::new();
    for (entry, path) in routes(&served.process_id) {
        for caller in CallerKind::ALL {
            let logged_before = served.log().len();
            let answer = call(&http, &served.url, (entry, Some(path.clone())), caller, &served.callers).await;
            let troubles = server_troubles(&served.log()[logged_before..]);
            let named = format!("{} {path} as {caller:?}", entry.method);
            match answer {
                Err(no_answer) => stuck.push(no_answer),
                Ok((status, _)) if status.is_server_error() => stuck.push(format!("{named}: {status}")),
                Ok(_) if !troubles.is_empty() => stuck.push(format!("{named}: {}", troubles.join("\n"))),
                Ok(_) => {}
            }
        }
    }
    assert!(stuck.is_empty(), "routes that waited for a second connection (or failed):\n{}", stuck.join("\n"));
    let troubles = server_troubles(&served.log());
    assert!(troubles.is_empty(), "the server logged:\n{}", troubles.join("\n"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_audit_page_read_by_four_times_as_many_as_its_pool_has_connections_finishes_without_a_pool_timeout() {
    let pool = 2;
    let served =
        Served::start(&[("RERUN_GATE_DB_PAGE_CONNECTIONS", "2"), ("RERUN_GATE_DB_ACQUIRE_TIMEOUT_SECONDS", "5")]).await;
    let auditor = served.callers.cookies.iter().find(|(role, _)| *role == Role::Auditor).unwrap().1.clone();
    let http = reqwest::Client::new();
    let readers = (0..4 * pool).map(|_| {
        let (http, url, cookie) = (http.clone(), served.url.clone(), auditor.clone());
        tokio::spawn(async move {
            let mut statuses = Vec::new();
            for _ in 0..5 {
                let answer = http.get(format!("{url}/audit")).header("cookie", &cookie).send().await.unwrap();
                let status = answer.status();
                let body = answer.text().await.unwrap();
                statuses.push((status, body.contains("data-testid=\"chain-status\"")));
            }
            statuses
        })
    });
    let answers: Vec<_> = futures::future::join_all(readers).await.into_iter().flat_map(|r| r.unwrap()).collect();
    assert!(answers.iter().all(|&(status, whole)| status == StatusCode::OK && whole), "{answers:?}");
    let troubles = server_troubles(&served.log());
    assert!(troubles.is_empty(), "the server logged:\n{}", troubles.join("\n"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_saturated_server_answers_503_with_retry_after_at_once_and_serves_again_when_the_load_is_gone() {
    // No queue: what a full queue does, at once.
    let app = TestApp::spawn_with(|s| {
        let a = &mut s.admission;
        (a.pages.waiting, a.calls.waiting, a.api.waiting) = (0, 0, 0)
    })
    .await;
    app.user("sato", &["staff"], &["sales"]).await;
    let cookie = app.sign_in("sato", PASSWORD).await;
    let token = app.token("intake", &["sales"]).await;
    let page = || app.http.get(format!("{}/", app.url)).header("cookie", &cookie).send();
    let server_fn = || {
        app.http
            .post(format!("{}/api/me", app.url))
            .header("cookie", &cookie)
            .header("content-type", "application/x-www-form-urlencoded")
            .body("")
            .send()
    };
    let api = || app.http.get(format!("{}/api/v1/operations/P-1", app.url)).bearer_auth(&token).send();

    // Every turn of the pages, the calls and the API taken, as by requests in flight, and the queues set to nothing.
    let admission = &app.state.admission;
    let pages_held = admission.pages.take_every_turn().await;
    let (calls_held, api_held) = (admission.calls.take_every_turn().await, admission.api.take_every_turn().await);
    let shed = [page().await.unwrap(), server_fn().await.unwrap(), api().await.unwrap()];
    for answer in &shed {
        assert_eq!(answer.status(), StatusCode::SERVICE_UNAVAILABLE, "{}", answer.url());
        let retry_after = answer.headers().get("retry-after").and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
        assert!(retry_after.is_some_and(|s| s >= 1), "{}: Retry-After {retry_after:?}", answer.url());
    }
    let [page_answer, fn_answer, api_answer] = shed;
    let busy_page = page_answer.text().await.unwrap();
    assert!(busy_page.contains("http-equiv=\"refresh\"") && busy_page.contains("混み合って"), "{busy_page}");
    let fn_error: contract::AppError = fn_answer.json().await.unwrap();
    assert!(matches!(fn_error, contract::AppError::Busy { .. }), "{fn_error:?}");
    let problem: serde_json::Value = api_answer.json().await.unwrap();
    assert_eq!(problem["type"], "/problems/busy", "{problem}");
    assert!(
        admission.pages.refused.get() >= 1 && admission.calls.refused.get() >= 1 && admission.api.refused.get() >= 1
    );

    drop((pages_held, calls_held, api_held));
    assert_eq!(page().await.unwrap().status(), StatusCode::OK);
    assert_eq!(server_fn().await.unwrap().status(), StatusCode::OK);
    assert_eq!(api().await.unwrap().status(), StatusCode::NOT_FOUND, "served again: P-1 does not exist");
}
