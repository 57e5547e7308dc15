//! Pages never break under load (issue 22): every page, as each role, from 32 clients at once for a while
//! (`RERUN_GATE_SOAK_SECONDS`, 10 here; `make bench` runs it for 60 s against the release binary), against a
//! server process of its own with the demo data. Every answer is 200 with a whole body (the document and every
//! streamed chunk), and the log shows no connection-pool timeout and no panic.
use crate::harness::{TestApp, server_process, server_troubles};
use app::api::policy::POLICY;
use backend::db::operations::{BoardQuery, stalled_page};
use domain::access::Kind;
use reqwest::StatusCode;
use std::time::{Duration, Instant};

const CLIENTS: usize = 32;

/// Every page a signed-in user can open: the operation page once per operation of the demo, and the pages of
/// one object (the demo has none of those yet) with the first ID, which shows the page's own "not found".
fn pages(process_ids: &[String]) -> Vec<String> {
    let pages = POLICY.iter().filter(|e| e.kind == Kind::Page && e.path != "/sign-in");
    pages
        .flat_map(|e| match e.path.contains("{process_id}") {
            true => process_ids.iter().map(|id| e.path.replace("{process_id}", id)).collect(),
            false => vec![e.path.replace("{id}", "1")],
        })
        .collect()
}

/// The demo's stalled operations.
async fn demo_operations(app: &TestApp) -> Vec<String> {
    let query =
        BoardQuery { departments: None, workflow: None, event: None, created_before: None, after_id: 0, limit: 100 };
    let rows = stalled_page(&mut app.db().begin_read().await.unwrap(), &query).await.unwrap();
    rows.into_iter().map(|r| r.process_id).collect()
}

/// A streamed page is whole when its document is closed and the last chunk says nothing is left to come.
fn is_whole(body: &str) -> bool {
    body.contains("</html>") && body.trim_end().ends_with("__INCOMPLETE_CHUNKS=[];</script>")
}

/// One client of a signed-in user: loads the pages in turn until the time is up. Returns pages loaded and
/// failures.
async fn client(
    url: String,
    username: String,
    cookie: String,
    pages: Vec<String>,
    until: Instant,
    offset: usize,
) -> (usize, Vec<String>) {
    let http = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    let (mut loaded, mut failures) = (0, Vec::new());
    for page in pages.iter().cycle().skip(offset) {
        if Instant::now() >= until {
            break;
        }
        let answer = http.get(format!("{url}{page}")).header("cookie", &cookie).send();
        let whole = async {
            let answer = answer.await.map_err(|e| format!("no answer: {e}"))?;
            let status = answer.status();
            let body = answer.text().await.map_err(|e| format!("{status}, body cut: {e}"))?;
            match (status, is_whole(&body)) {
                (StatusCode::OK, true) => Ok(()),
                (StatusCode::OK, false) => Err(format!(
                    "200, body stops after {} bytes: {:?}",
                    body.len(),
                    body.chars().rev().take(200).collect::<String>().chars().rev().collect::<String>()
                )),
                (status, _) => Err(format!("{status}")),
            }
        };
        match tokio::time::timeout(Duration::from_secs(20), whole).await {
            Ok(Ok(())) => loaded += 1,
            Ok(Err(problem)) => failures.push(format!("{page} as {username}: {problem}")),
            Err(_) => failures.push(format!("{page} as {username}: no whole body within 20 s")),
        }
    }
    (loaded, failures)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thirty_two_clients_loading_every_page_as_each_role_get_only_whole_pages() {
    let seconds: u64 = std::env::var("RERUN_GATE_SOAK_SECONDS").ok().and_then(|s| s.parse().ok()).unwrap_or(10);
    let app = TestApp::spawn().await;
    let users = backend::demo::load_if_empty(&app.state).await.unwrap().expect("an empty database");
    let pages = pages(&demo_operations(&app).await);
    assert!(pages.len() > 20, "the demo's pages: {pages:?}");
    let log = std::env::temp_dir().join(format!("rerun-gate-soak-{}.log", uuid::Uuid::new_v4().simple()));
    let config = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../rerun-gate.toml"));
    let (mut server, url) = server_process(&app.database_url, config, &[("RUST_LOG", "warn")], Some(&log)).await;

    // Each user signs in once (32 sign-ins at once would meet the password checks' queue), then has several
    // clients.
    let http = reqwest::Client::new();
    let mut sessions = Vec::new();
    for user in &users {
        sessions.push((
            user.username.clone(),
            crate::harness::sign_in_at(&http, &url, &user.username, &user.password).await,
        ));
    }
    let until = Instant::now() + Duration::from_secs(seconds);
    let clients = (0..CLIENTS).map(|i| {
        let (username, cookie) = sessions[i % sessions.len()].clone();
        tokio::spawn(client(url.clone(), username, cookie, pages.clone(), until, i))
    });
    let mut loaded = 0;
    let mut failures = Vec::new();
    for done in futures::future::join_all(clients).await {
        let (pages, mut failed) = done.unwrap();
        loaded += pages;
        failures.append(&mut failed);
    }
    server.kill().unwrap();
    server.wait().unwrap();
    let logged = std::fs::read_to_string(&log).unwrap_or_default();
    let _ = std::fs::remove_file(&log);

    assert!(
        failures.is_empty(),
        "{} of {} page loads failed:\n{}",
        failures.len(),
        loaded + failures.len(),
        failures.join("\n")
    );
    assert!(loaded > CLIENTS, "only {loaded} pages loaded in {seconds} s");
    eprintln!("soak: {loaded} whole pages in {seconds} s from {CLIENTS} clients");
    let troubles = server_troubles(&logged);
    assert!(troubles.is_empty(), "the server logged:\n{}", troubles.join("\n"));
}
