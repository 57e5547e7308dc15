//! A fixed-time load on the release server binary (its own process, so that its memory is its own): the stalled
//! board as a signed-in user (its server function, and its whole server-rendered page), each against
//! `GET /healthz` with the same clients as the floor; the whole page also against a bare handler reading its rows
//! (`bare_board.rs`). Requests/s, p50/p99, errors, and the server's memory before and after. (Registrations are
//! measured against the engine's own rate: `ingest.rs`.)
use anyhow::Context;
use backend::{Db, ServerOptions, SystemClock};
use serde_json::json;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

const STALLED: usize = 2_000;

pub struct Phase {
    pub requests_per_second: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub errors: usize,
}

pub struct Load {
    pub clients: usize,
    pub seconds: u64,
    pub floor: Phase,
    pub board: Phase,
    pub board_page: Phase,
    pub bare_board: Phase,
    pub rss_before_mib: f64,
    pub rss_after_mib: f64,
    pub rss_peak_mib: f64,
}

pub async fn run(dir: &std::path::Path, clients: usize, seconds: u64) -> anyhow::Result<Load> {
    let url = fresh_database(dir, "load.db");
    let user = prepare(server::startup::open_database(&url).await?).await?;
    let http = reqwest::Client::builder().pool_max_idle_per_host(clients).timeout(Duration::from_secs(30)).build()?;
    let servers = Servers::start(&url, &http, &user).await?;
    let (base, bare, cookie) = (&servers.base, &servers.bare, &servers.cookie);

    let rss_before_mib = rss(servers.app.id(), "VmRSS")?;
    let floor = phase(clients, seconds, |_, _| http.get(format!("{base}/healthz")).send(), 200).await;
    let board = phase(
        clients,
        seconds,
        |_, _| {
            http.post(format!("{base}/api/board/stalled")).header("cookie", cookie).json(&json!({"filter": {}})).send()
        },
        200,
    )
    .await;
    let board_page =
        phase(clients, seconds, |_, _| http.get(format!("{base}/")).header("cookie", cookie).send(), 200).await;
    let bare_board = phase(clients, seconds, |_, _| http.get(format!("{bare}/board")).send(), 200).await;
    Ok(Load {
        clients,
        seconds,
        floor,
        board,
        board_page,
        bare_board,
        rss_before_mib,
        rss_after_mib: rss(servers.app.id(), "VmRSS")?,
        rss_peak_mib: rss(servers.app.id(), "VmHWM")?,
    })
}

/// The board's whole page against the bare handler with `operations` more operations in the table (every tenth
/// stalled, half of those in sales): (page, bare).
pub async fn page_against_bare_at_scale(
    dir: &std::path::Path,
    clients: usize,
    seconds: u64,
    operations: usize,
) -> anyhow::Result<(Phase, Phase)> {
    let url = fresh_database(dir, "load-scale.db");
    let db = server::startup::open_database(&url).await?;
    let user = prepare(db.clone()).await?;
    super::board::fill(&db, operations).await?;
    db.optimize().await?; // as the housekeeping does every five minutes
    db.close().await;
    let http = reqwest::Client::builder().pool_max_idle_per_host(clients).timeout(Duration::from_secs(30)).build()?;
    let servers = Servers::start(&url, &http, &user).await?;
    let (base, bare, cookie) = (&servers.base, &servers.bare, &servers.cookie);
    let page = phase(clients, seconds, |_, _| http.get(format!("{base}/")).header("cookie", cookie).send(), 200).await;
    let bare = phase(clients, seconds, |_, _| http.get(format!("{bare}/board")).send(), 200).await;
    Ok((page, bare))
}

/// The release binary and the bare board handler serving one database, each in a process of its own, and the
/// session cookie of the load's user; both processes end when this is dropped.
struct Servers {
    app: std::process::Child,
    bare_board: std::process::Child,
    base: String,
    bare: String,
    cookie: String,
}

impl Servers {
    async fn start(url: &str, http: &reqwest::Client, user: &(String, String)) -> anyhow::Result<Servers> {
        let (app, base) = start_server(url)?;
        let (bare_board, bare) = start_bare_board(url)?;
        let mut servers = Servers { app, bare_board, base, bare, cookie: String::new() };
        wait_ready(http, &format!("{}/readyz", servers.base)).await;
        wait_ready(http, &format!("{}/board", servers.bare)).await;
        servers.cookie = sign_in(http, &servers.base, user).await?;
        Ok(servers)
    }
}

impl Drop for Servers {
    fn drop(&mut self) {
        for child in [&mut self.app, &mut self.bare_board] {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

pub(crate) fn fresh_database(dir: &std::path::Path, name: &str) -> String {
    let path = dir.join(name);
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
    format!("sqlite://{}?mode=rwc", path.display())
}

fn free_port() -> anyhow::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

/// The release binary serving `url` on a free port, without the per-client rate limit (QUALITY 15): the bench
/// measures the engine's limit.
pub(crate) fn start_server(url: &str) -> anyhow::Result<(std::process::Child, String)> {
    let port = free_port()?;
    // BENCH_SERVER_BIN: another build of the server (an earlier commit's, for a before/after in one run).
    let bin = std::env::var("BENCH_SERVER_BIN").unwrap_or_else(|_| "target/release/server".into());
    let server = std::process::Command::new(&bin)
        .arg("serve")
        .env("DATABASE_URL", url)
        .env("LEPTOS_SITE_ADDR", format!("127.0.0.1:{port}"))
        .env("LEPTOS_OUTPUT_NAME", "rerun-gate")
        .env("LEPTOS_SITE_ROOT", "target/site")
        .env("RUST_LOG", "warn")
        .env("RERUN_GATE_API_RATE_PER_SECOND", "1000000")
        .env("RERUN_GATE_API_BURST", "1000000")
        .stdout(std::process::Stdio::null())
        // Its warnings and errors, for when a figure looks wrong.
        .stderr(std::fs::File::create("target/bench/server.log")?)
        .spawn()
        .with_context(|| format!("start {bin} (make bench builds target/release/server)"))?;
    Ok((server, format!("http://127.0.0.1:{port}")))
}

/// This bench binary as the bare board handler (see `bare_board.rs`).
fn start_bare_board(url: &str) -> anyhow::Result<(std::process::Child, String)> {
    let port = free_port()?;
    let bare = std::process::Command::new(std::env::current_exe()?)
        .args(["bare-board", url, &port.to_string()])
        .stdout(std::process::Stdio::null())
        .spawn()
        .context("start the bare board handler")?;
    Ok((bare, format!("http://127.0.0.1:{port}")))
}

pub(crate) async fn wait_ready(http: &reqwest::Client, url: &str) {
    for _ in 0..400 {
        if http.get(url).send().await.is_ok_and(|r| r.status().is_success()) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn sign_in(
    http: &reqwest::Client,
    base: &str,
    (username, password): &(String, String),
) -> anyhow::Result<String> {
    let signed_in = http
        .post(format!("{base}/api/sign_in"))
        .form(&[("username", username.as_str()), ("password", password.as_str())])
        .send()
        .await?;
    anyhow::ensure!(signed_in.status().is_success(), "sign-in for the load failed: {}", signed_in.status());
    Ok(signed_in
        .headers()
        .get_all("set-cookie")
        .iter()
        .filter_map(|c| c.to_str().ok()?.split(';').next().map(str::to_string))
        .collect::<Vec<_>>()
        .join("; "))
}

/// A staff user (name, password), and stalled operations of `sales` for the board to show.
async fn prepare(db: Db) -> anyhow::Result<(String, String)> {
    let config = server::startup::load_config(None)?;
    let state =
        server::startup::state(db, Arc::new(SystemClock), ServerOptions::new("http://127.0.0.1"), config).await?;
    let actor = || domain::audit::Actor::system(domain::audit::SystemActor::CommandLine);
    let password = format!("load-{}", uuid::Uuid::new_v4().simple());
    let new = contract::admin::NewUser {
        username: "load".into(),
        display_name: "Load".into(),
        password: password.clone(),
        roles: vec![domain::roles::Role::Staff],
        departments: vec!["sales".into()],
        memberships: Vec::new(),
        email: String::new(),
    };
    backend::services::users::add(&state, actor(), None, new).await.map_err(|e| anyhow::anyhow!("{e}"))?;
    let (_, token) = backend::services::api_clients::create(&state, actor(), "load", &["sales".to_string()])
        .await
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let client =
        backend::services::api_clients::authenticate(&state, &token).await.map_err(|e| anyhow::anyhow!("{e}"))?;
    let client = client.context("the load token")?;
    for i in 0..STALLED {
        let id = format!("LOAD-STALLED-{i}");
        let body = super::order_intake(&id);
        backend::services::registration::register(&state, &client, &id, &body)
            .await
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        let failed = serde_json::from_value(
            json!({"seq": 1, "type": "failed", "error": {"class": "server_error", "message": "503"}}),
        )?;
        backend::services::step_events::report(&state, &client, &id, "register_order", failed)
            .await
            .map_err(|e| anyhow::anyhow!("{e}"))?;
    }
    backend::services::sweeper::sweep(&state).await.map_err(|e| anyhow::anyhow!("{e}"))?;
    Ok(("load".into(), password))
}

/// `clients` loops sending `request(client, n)` for `seconds`; an answer other than `ok` (or none) is an error.
pub(crate) async fn phase<'a, F, Fut>(clients: usize, seconds: u64, request: F, ok: u16) -> Phase
where
    F: Fn(usize, usize) -> Fut + Sync,
    Fut: std::future::Future<Output = reqwest::Result<reqwest::Response>> + Send + 'a,
{
    let errors = AtomicUsize::new(0);
    let deadline = Instant::now() + Duration::from_secs(seconds);
    let started = Instant::now();
    let loops = (0..clients).map(|client| {
        let (request, errors) = (&request, &errors);
        async move {
            let mut latencies = Vec::new();
            let mut n = 0;
            while Instant::now() < deadline {
                let sent = Instant::now();
                let good = match request(client, n).await {
                    Ok(answer) => answer.status().as_u16() == ok && answer.bytes().await.is_ok(),
                    Err(_) => false,
                };
                latencies.push(sent.elapsed().as_secs_f64() * 1000.0);
                if !good {
                    errors.fetch_add(1, Ordering::Relaxed);
                }
                n += 1;
            }
            latencies
        }
    });
    let mut latencies: Vec<f64> = futures::future::join_all(loops).await.into_iter().flatten().collect();
    let elapsed = started.elapsed().as_secs_f64();
    latencies.sort_by(|a, b| a.total_cmp(b));
    let at = |q: f64| latencies.get(((latencies.len() as f64 - 1.0) * q).round() as usize).copied().unwrap_or(0.0);
    Phase {
        requests_per_second: latencies.len() as f64 / elapsed,
        p50_ms: at(0.5),
        p99_ms: at(0.99),
        errors: errors.into_inner(),
    }
}

/// A line of /proc/PID/status in MiB (`VmRSS` now, `VmHWM` the peak).
fn rss(pid: u32, key: &str) -> anyhow::Result<f64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let line = status.lines().find(|l| l.starts_with(key)).with_context(|| format!("{key} in /proc/{pid}/status"))?;
    let kib: f64 = line.split_whitespace().nth(1).context("a number")?.parse()?;
    Ok(kib / 1024.0)
}
