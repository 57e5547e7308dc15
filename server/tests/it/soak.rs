//! Pages never break under load (issues 22 and 61): every page, the audit page included, as each role, from 32
//! clients at once for a while, against a server process of its own with the demo data. Every answer is 200 with a
//! whole body (the document and every streamed chunk), and the log shows no connection-pool timeout and no panic.
//! `make bench` runs the same test against the release binary at full length and size, through the variables
//! `RERUN_GATE_SOAK_SECONDS` (10 here), `…_CLIENTS` (32), `…_PAGES` (`all`, or `audit` for the audit page alone),
//! `…_BEYOND` (far beyond capacity: 503 with `Retry-After` is then the expected answer to the excess) and
//! `…_EVENTS` (that many API clients send step events meanwhile, measured before the browsing too) and
//! `…_APPROVALS` (that many requests approved over HTTP at an even pace meanwhile, each timed to its rerun's
//! arrival at a receiver of the test).
use crate::harness::{TestApp, server_process, server_troubles};
use app::api::policy::POLICY;
use backend::db::operations::{BoardQuery, stalled_page};
use domain::access::Kind;
use reqwest::StatusCode;
use serde_json::json;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// When each rerun reached the test's receiver, by process ID.
type Arrivals = Arc<Mutex<HashMap<String, Instant>>>;

/// A rerun receiver that notes when each rerun arrives; its URL.
async fn receiver(arrivals: Arrivals) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/rerun", listener.local_addr().unwrap());
    let app = axum::Router::new().route(
        "/rerun",
        axum::routing::post(move |body: axum::Json<serde_json::Value>| async move {
            let id = body["process_id"].as_str().unwrap_or_default().to_string();
            arrivals.lock().unwrap().entry(id).or_insert_with(Instant::now);
            "ok"
        }),
    );
    tokio::spawn(async move { axum::serve(listener, app).await });
    url
}

/// The example configuration with every rerun sent to `url`, in a file of its own (the server process reads it).
fn config_sending_to(url: &str) -> std::path::PathBuf {
    let example = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../rerun-gate.toml"));
    let text = std::fs::read_to_string(example).unwrap().replace("http://127.0.0.1:3000/demo/rerun", url);
    let path = std::env::temp_dir().join(format!("rerun-gate-soak-{}.toml", uuid::Uuid::new_v4().simple()));
    std::fs::write(&path, text).unwrap();
    path
}

/// `n` requests of sato's waiting for approval (each operation stalled at its first step).
async fn waiting_requests(app: &TestApp, token: &str, n: usize) -> Vec<(String, String)> {
    let ids: Vec<String> = (0..n).map(|i| format!("SOAK-APPROVE-{i}")).collect();
    for id in &ids {
        let body = json!({"process_id": id, "workflow": "order-intake", "department": "sales",
            "steps": [{"name": "register_order", "idempotency_key": format!("{id}-r")},
                      {"name": "ai_summary", "idempotency_key": format!("{id}-s")}]});
        app.api(reqwest::Method::POST, "/api/v1/operations", token, Some(id), Some(&body)).await;
        let failed = json!({"seq": 1, "type": "failed", "error": {"class": "server_error", "message": "503"}});
        let path = format!("/api/v1/operations/{id}/steps/register_order/events");
        app.api(reqwest::Method::POST, &path, token, None, Some(&failed)).await;
    }
    app.clock.advance(chrono::Duration::minutes(5)); // past the look-ups' consistency delay
    backend::services::sweeper::sweep(&app.state).await.unwrap();
    let sato = crate::fixtures::caller(app, "sato").await;
    let mut requests = Vec::new();
    for id in ids {
        requests.push((crate::fixtures::submitted(app, &sato, &id).await, id));
    }
    requests
}

/// suzuki approves each request over HTTP, spread evenly until `until`: when each approval was asked for.
async fn approve(url: &str, cookie: &str, requests: Vec<(String, String)>, until: Instant) -> HashMap<String, Instant> {
    let http = reqwest::Client::new();
    let pace = until.saturating_duration_since(Instant::now()) / (requests.len() as u32 + 1);
    let mut asked = HashMap::new();
    for (request, process_id) in requests {
        tokio::time::sleep(pace).await;
        asked.insert(process_id, Instant::now());
        let form = [("id", request.as_str()), ("approve", "true"), ("comment", "")];
        let answer = http.post(format!("{url}/api/approvals/decide")).header("cookie", cookie).form(&form);
        let answer = answer.send().await.unwrap();
        assert_eq!(answer.status(), StatusCode::OK, "approval of {request}: {}", answer.text().await.unwrap());
    }
    asked
}

/// Approval → arrival of each rerun, once every one arrived (waiting up to 10 s after the last approval).
async fn dispatch_times(asked: &HashMap<String, Instant>, arrivals: &Arrivals) -> Vec<Duration> {
    for _ in 0..200 {
        if asked.keys().all(|id| arrivals.lock().unwrap().contains_key(id)) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let arrived = arrivals.lock().unwrap();
    let missing: Vec<&String> = asked.keys().filter(|id| !arrived.contains_key(*id)).collect();
    assert!(missing.is_empty(), "reruns approved but not sent within 10 s: {missing:?}");
    asked.iter().map(|(id, at)| arrived[id].duration_since(*at)).collect()
}

fn setting(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|s| s.parse().ok()).unwrap_or(default)
}

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
pub async fn demo_operations(app: &TestApp) -> Vec<String> {
    let query =
        BoardQuery { departments: None, workflow: None, event: None, created_before: None, after_id: 0, limit: 100 };
    let rows = stalled_page(&mut app.db().begin_read().await.unwrap(), &query).await.unwrap();
    rows.into_iter().map(|r| r.process_id).collect()
}

/// A streamed page is whole when its document is closed and the last chunk says nothing is left to come.
fn is_whole(body: &str) -> bool {
    body.contains("</html>") && body.trim_end().ends_with("__INCOMPLETE_CHUNKS=[];</script>")
}

/// What the clients saw: the time of each whole page and of each 503 (with `Retry-After`) when shedding is
/// expected, and everything else as a failure.
#[derive(Default)]
struct Seen {
    whole: Vec<Duration>,
    shed: Vec<Duration>,
    failures: Vec<String>,
}

impl Seen {
    fn add(&mut self, other: Seen) {
        self.whole.extend(other.whole);
        self.shed.extend(other.shed);
        self.failures.extend(other.failures);
    }
}

/// The `q`-quantile of `times`, in milliseconds.
fn quantile(times: &[Duration], q: f64) -> f64 {
    let mut ms: Vec<f64> = times.iter().map(|d| d.as_secs_f64() * 1000.0).collect();
    ms.sort_by(f64::total_cmp);
    ms.get(((ms.len() as f64 * q) as usize).min(ms.len().saturating_sub(1))).copied().unwrap_or(f64::NAN)
}

/// What one load of a page gave: a whole page, or (when shedding is expected) a 503 that asks to come back after
/// so many seconds.
#[derive(Debug, PartialEq)]
enum Loaded {
    Whole,
    Shed { retry_after: u64 },
}

/// One page, once: whole, shed (when `beyond`), or what went wrong.
async fn load_page(http: &reqwest::Client, url: &str, cookie: &str, beyond: bool) -> Result<Loaded, String> {
    let answer = http.get(url).header("cookie", cookie).send().await.map_err(|e| format!("no answer: {e}"))?;
    let status = answer.status();
    let retry_after = answer.headers().get("retry-after").and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
    let body = answer.text().await.map_err(|e| format!("{status}, body cut: {e}"))?;
    match (status, is_whole(&body), retry_after) {
        (StatusCode::OK, true, _) => Ok(Loaded::Whole),
        (StatusCode::SERVICE_UNAVAILABLE, _, Some(retry_after)) if beyond => Ok(Loaded::Shed { retry_after }),
        (StatusCode::OK, false, _) => Err(format!(
            "200, body stops after {} bytes: {:?}",
            body.len(),
            body.chars().rev().take(200).collect::<String>().chars().rev().collect::<String>()
        )),
        (status, ..) => Err(format!("{status}")),
    }
}

/// One client of a signed-in user: loads the pages in turn until the time is up; told to come back later, it waits
/// as long as it was told (as the busy page does, which loads itself again after `Retry-After`).
async fn client(url: String, who: (String, String), pages: Vec<String>, until: Instant, offset: usize) -> Seen {
    let (username, cookie) = who;
    let beyond = std::env::var_os("RERUN_GATE_SOAK_BEYOND").is_some();
    let http = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    let mut seen = Seen::default();
    for page in pages.iter().cycle().skip(offset) {
        if Instant::now() >= until {
            break;
        }
        let started = Instant::now();
        let address = format!("{url}{page}");
        let loaded = load_page(&http, &address, &cookie, beyond);
        match tokio::time::timeout(Duration::from_secs(20), loaded).await {
            Ok(Ok(Loaded::Whole)) => seen.whole.push(started.elapsed()),
            Ok(Ok(Loaded::Shed { retry_after })) => {
                seen.shed.push(started.elapsed());
                tokio::time::sleep(Duration::from_secs(retry_after)).await;
            }
            Ok(Err(problem)) => seen.failures.push(format!("{page} as {username}: {problem}")),
            Err(_) => seen.failures.push(format!("{page} as {username}: no whole body within 20 s")),
        }
    }
    seen
}

/// Beyond capacity, a probe in a process of its own (curl, one request every 50 ms) times the server's answers
/// apart from the load generator's own scheduling: what part of the clients' wait is the server's.
fn probe(url: &str, cookie: &str, seconds: u64) -> std::process::Child {
    let script = format!(
        "end=$(( $(date +%s) + {seconds} )); while [ $(date +%s) -lt $end ]; do \
         curl -s -o /dev/null -m 20 -w '%{{http_code}} %{{time_total}}\\n' -H 'cookie: {cookie}' '{url}/'; \
         sleep 0.05; done"
    );
    std::process::Command::new("sh")
        .args(["-c", &script])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("sh and curl")
}

/// The probe's 503s and whole pages, each with its time.
fn probed(probe: std::process::Child) -> (Vec<Duration>, Vec<Duration>) {
    let out = probe.wait_with_output().map(|o| String::from_utf8_lossy(&o.stdout).into_owned()).unwrap_or_default();
    let (mut shed, mut whole) = (Vec::new(), Vec::new());
    for line in out.lines() {
        let mut parts = line.split_whitespace();
        let (Some(code), Some(seconds)) = (parts.next(), parts.next().and_then(|s| s.parse::<f64>().ok())) else {
            continue;
        };
        match code {
            "503" => shed.push(Duration::from_secs_f64(seconds)),
            "200" => whole.push(Duration::from_secs_f64(seconds)),
            _ => {}
        }
    }
    (shed, whole)
}

/// `clients` API clients sending step events (each to its own operation, every event a change) until `until`:
/// events per second. They run on threads of their own, as the probe runs in a process of its own: on the load
/// generator's runtime they would wait for a turn behind the 128 page clients' parsing, and measure that.
async fn send_events(url: &str, token: &str, clients: usize, until: Instant, run: &str) -> f64 {
    let (url, token, run) = (url.to_string(), token.to_string(), run.to_string());
    let (sent, rate) = tokio::sync::oneshot::channel();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
        let _ = sent.send(runtime.block_on(events_from(&url, &token, clients, until, &run)));
    });
    rate.await.expect("the event clients' thread ends with their rate")
}

async fn events_from(url: &str, token: &str, clients: usize, until: Instant, run: &str) -> f64 {
    let started = Instant::now();
    let workers = (0..clients).map(|c| {
        let (url, token, id) = (url.to_string(), token.to_string(), format!("SOAK-{run}-{c}"));
        tokio::spawn(async move {
            let http = reqwest::Client::new();
            let body = json!({"process_id": id, "workflow": "order-intake", "department": "sales",
                "steps": [{"name": "register_order", "idempotency_key": format!("{id}-r")},
                          {"name": "ai_summary", "idempotency_key": format!("{id}-s")}]});
            let registered = http.post(format!("{url}/api/v1/operations")).bearer_auth(&token);
            let registered = registered.header("idempotency-key", &id).json(&body).send().await.unwrap();
            assert_eq!(registered.status(), StatusCode::CREATED, "{}", registered.text().await.unwrap());
            let path = format!("{url}/api/v1/operations/{id}/steps/register_order/events");
            let mut seq = 0;
            while Instant::now() < until {
                seq += 1;
                let event = match seq % 2 {
                    1 => json!({"seq": seq, "type": "started"}),
                    _ => json!({"seq": seq, "type": "failed", "error": {"class": "server_error", "message": "503"}}),
                };
                let answer = http.post(&path).bearer_auth(&token).json(&event).send().await.unwrap();
                assert!(answer.status().is_success(), "step event {seq} of {id}: {}", answer.status());
            }
            seq
        })
    });
    let sent: usize = futures::future::join_all(workers).await.into_iter().map(|w| w.unwrap()).sum();
    sent as f64 / started.elapsed().as_secs_f64()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thirty_two_clients_loading_every_page_as_each_role_get_only_whole_pages() {
    let seconds = setting("RERUN_GATE_SOAK_SECONDS", 10) as u64;
    let clients = setting("RERUN_GATE_SOAK_CLIENTS", 32);
    let event_clients = setting("RERUN_GATE_SOAK_EVENTS", 0);
    let approvals = setting("RERUN_GATE_SOAK_APPROVALS", 0);
    let audit_only = std::env::var("RERUN_GATE_SOAK_PAGES").as_deref() == Ok("audit");
    let arrivals = Arrivals::default();
    let config = config_sending_to(&receiver(arrivals.clone()).await);
    // The process's clock is the real one: the test's starts a little before it.
    let start = chrono::Utc::now() - chrono::Duration::minutes(10);
    let app = TestApp::spawn_at(start, |_| {}, |_| server::startup::load_config(Some(&config)).unwrap()).await;
    let users = backend::demo::load_if_empty(&app.state).await.unwrap().expect("an empty database");
    let token = app.token("soak", &["sales"]).await;
    let requests = waiting_requests(&app, &token, approvals).await;
    let pages = if audit_only { vec!["/audit".to_string()] } else { pages(&demo_operations(&app).await) };
    assert!(audit_only || pages.len() > 20, "the demo's pages: {pages:?}");
    assert!(pages.iter().any(|p| p == "/audit"), "the audit page is among the pages: {pages:?}");
    let log = std::env::temp_dir().join(format!("rerun-gate-soak-{}.log", uuid::Uuid::new_v4().simple()));
    // The API clients' own rate limit is not what this measures.
    let env = [("RUST_LOG", "warn"), ("RERUN_GATE_API_RATE_PER_SECOND", "100000"), ("RERUN_GATE_API_BURST", "100000")];
    let (server, url) = server_process(&app.database_url, &config, &env, Some(&log)).await;
    let mut server = Stopped(server);

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
    let events_alone = match event_clients {
        0 => None,
        n => Some(send_events(&url, &token, n, Instant::now() + Duration::from_secs(seconds), "alone").await),
    };
    let until = Instant::now() + Duration::from_secs(seconds);
    let beyond = std::env::var_os("RERUN_GATE_SOAK_BEYOND").is_some();
    let probe = beyond.then(|| probe(&url, &sessions[0].1, seconds));
    let browsing = (0..clients).map(|i| {
        let who = sessions[i % sessions.len()].clone();
        tokio::spawn(client(url.clone(), who, pages.clone(), until, i))
    });
    let events = async {
        match event_clients {
            0 => None,
            n => Some(send_events(&url, &token, n, until, "browsing").await),
        }
    };
    let manager = &sessions.iter().find(|(name, _)| name == "suzuki").expect("the demo's manager").1;
    let approved = approve(&url, manager, requests, until);
    let (browsed, events_browsing, asked) =
        futures::future::join3(futures::future::join_all(browsing), events, approved).await;
    let dispatched = dispatch_times(&asked, &arrivals).await;
    let probed = probe.map(probed);
    let load_ended = Instant::now();
    let mut seen = Seen::default();
    browsed.into_iter().for_each(|done| seen.add(done.unwrap()));
    let recovered = back_to_normal(&url, &sessions[0].1).await;
    let recovery = load_ended.elapsed();
    server.stop();
    let logged = std::fs::read_to_string(&log).unwrap_or_default();
    let _ = (std::fs::remove_file(&log), std::fs::remove_file(&config));

    let (loaded, failures) = (seen.whole.len(), &seen.failures);
    assert!(failures.is_empty(), "{} of {} page loads failed:\n{}", failures.len(), loaded, failures.join("\n"));
    assert!(loaded > clients.min(32), "only {loaded} pages loaded in {seconds} s");
    assert!(recovered, "a page after the load did not load whole within 10 s");
    let mut summary = format!(
        "soak: {loaded} whole pages in {seconds} s from {clients} clients; p50 {:.0} ms, p99 {:.0} ms",
        quantile(&seen.whole, 0.5),
        quantile(&seen.whole, 0.99)
    );
    if !seen.shed.is_empty() {
        summary += &format!(
            "; shed {} with 503 and Retry-After, p50 {:.0} ms, p99 {:.0} ms; back to normal {} ms after the load",
            seen.shed.len(),
            quantile(&seen.shed, 0.5),
            quantile(&seen.shed, 0.99),
            recovery.as_millis()
        );
    }
    if let Some((shed, whole)) = probed {
        summary += &format!(
            "; a probe in its own process: {} shed, p50 {:.0} ms, p99 {:.0} ms; {} whole, p50 {:.0} ms",
            shed.len(),
            quantile(&shed, 0.5),
            quantile(&shed, 0.99),
            whole.len(),
            quantile(&whole, 0.5)
        );
    }
    if !dispatched.is_empty() {
        summary += &format!(
            "; {} approvals dispatched, p50 {:.0} ms, p99 {:.0} ms",
            dispatched.len(),
            quantile(&dispatched, 0.5),
            quantile(&dispatched, 0.99)
        );
    }
    if let (Some(alone), Some(browsing)) = (events_alone, events_browsing) {
        summary += &format!("; step events alone {alone:.0}/s, while browsing {browsing:.0}/s");
    }
    eprintln!("{summary}");
    let troubles = server_troubles(&logged);
    assert!(troubles.is_empty(), "the server logged:\n{}", troubles.join("\n"));
}

/// Once the load is gone a page loads whole again: tried every 50 ms for up to 10 s.
async fn back_to_normal(url: &str, cookie: &str) -> bool {
    let http = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    for _ in 0..200 {
        if load_page(&http, &format!("{url}/"), cookie, false).await == Ok(Loaded::Whole) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    false
}

/// The server process, stopped when the test ends however it ends (a failed assertion included).
struct Stopped(std::process::Child);

impl Stopped {
    fn stop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Drop for Stopped {
    fn drop(&mut self) {
        self.stop();
    }
}
