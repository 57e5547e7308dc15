//! `make bench`: each figure next to a baseline measured in the same run, on the same machine and engine.
//!
//! Registrations and step events per second through the ingestion API of the release server in its own process
//! against the raw rate of one INSERT + COMMIT on the same engine, round by round (see `ingest.rs`); and
//! approval → dispatch latency with 1,000 queued approvals against bare signed POSTs (see `dispatch.rs`); and
//! the audit export of 1,000,000 events against `sqlite3 -csv` (see `export.rs`); and a fixed-time load on the
//! release binary against the board, next to `GET /healthz` (see `load.rs`); and a bulk
//! rerun's preview of 1,000 operations against the bare look-ups, and its dispatch rate against the configured
//! one (see `bulk.rs`).
mod bare_board;
mod board;
mod bulk;
mod canary;
mod dispatch;
mod export;
mod ingest;
mod load;
mod merkle;
mod slow_phone;
mod soak;

use backend::{Db, ServerOptions, SystemClock};
use serde_json::json;
use std::sync::Arc;
use std::time::Instant;

const ROUNDS: usize = 5;
const RAW_INSERTS: usize = 4_000;

const QUEUED_APPROVALS: usize = 1_000;
const OPERATIONS_AT_SCALE: usize = 1_000_000;
const AUDIT_EVENTS: usize = 1_000_000;
const BULK_OPERATIONS: usize = 1_000;
const BULK_PER_MINUTE: u32 = 3_000;

/// A number the environment may set, or its default.
fn setting<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    // The bench runs itself as the bare board handler, in a process of its own (see `load.rs`).
    if let [_, command, url, port] = &std::env::args().collect::<Vec<_>>()[..]
        && command == "bare-board"
    {
        return bare_board::serve(url, port.parse()?).await;
    }
    if std::env::var("RERUN_GATE_SECRET_ORDER_INTAKE").is_err() {
        // SAFETY: set before any task that reads the environment starts.
        unsafe {
            std::env::set_var("RERUN_GATE_SECRET_ORDER_INTAKE", "whsec_YmVuY2gtb25seS1yZXJ1bi1zaWduaW5nLXNlY3JldA==")
        };
    }
    backend::reconciliation::ssrf::install_tls_provider(); // for every HTTP client the bench makes
    let dir = std::path::Path::new("target/bench");
    std::fs::create_dir_all(dir)?;
    let db = server::startup::open_database(&database_url(dir)).await?;
    // BENCH_ONLY=<part>: that part only, printed, and bench/RESULTS.md is left as it is (it quotes whole runs only).
    let only = std::env::var("BENCH_ONLY").ok();
    let wanted = |part: &str| only.as_deref().is_none_or(|o| o == part);
    // Registrations and step events against the engine's own commit rate, the server in its own process.
    let ingest = if wanted("ingest") { ingest_table_rows(&db, dir).await? } else { String::new() };
    if only.as_deref() == Some("ingest") {
        println!("{ingest}");
        return Ok(());
    }
    // BENCH_ONLY=load, =soak, =bulk, =canary, =phone or =board: that part only.
    let at_scale = setting("BENCH_OPERATIONS", OPERATIONS_AT_SCALE);
    let load = if wanted("load") { load_rows(dir, at_scale).await? } else { String::new() };
    // Every page as each role from 32 and 128 clients, the audit page alone, step events meanwhile, and 1,000
    // clients, against the release binary.
    let soak = if wanted("soak") { soak::rows() } else { String::new() };
    let bulk = if wanted("bulk") { bulk_rows(&db).await? } else { String::new() };
    // BENCH_ONLY=canary: a bulk rerun in stages against the same sent at once, and one that stops itself.
    let canary = if wanted("canary") { canary_rows(&db).await? } else { String::new() };
    // The first pages on a slow phone (the release server and site must be built).
    let phone = if wanted("phone") { slow_phone::rows() } else { String::new() };
    let board = if wanted("board") { board_rows(&db, at_scale).await? } else { String::new() };
    // BENCH_ONLY=merkle: the audit trail's tree (at a million events on SQLite).
    if only.as_deref() == Some("merkle") {
        println!("{}", merkle_rows(&db).await?);
        return Ok(());
    }
    if only.as_deref().is_some_and(|o| o != "dispatch" && o != "export") {
        println!("{load}{soak}{bulk}{canary}{board}{phone}");
        return Ok(());
    }
    let dispatch = if wanted("dispatch") { dispatch_rows(&db).await? } else { String::new() };
    if only.as_deref() == Some("dispatch") {
        println!("{dispatch}");
        return Ok(());
    }
    let export = export_row(&db, dir).await?;
    // After the export: its million events are the tree's.
    let merkle = merkle_rows(&db).await?;
    let table = format!("| measure | value | baseline (same run) | ratio | target |\n|---|---|---|---|---|\n{ingest}")
        + &dispatch
        + &load
        + &soak
        + &bulk
        + &canary
        + &board
        + &phone
        + &export
        + &merkle;
    println!("{table}");
    if only.is_none() {
        let (file, report) = report(db.engine(), &table);
        std::fs::write(file, report)?;
    }
    Ok(())
}

/// A whole run's table with when, where and what it measured; one file per engine, each the latest run on it.
fn report(engine: &str, table: &str) -> (String, String) {
    let machine = format!("{} cores", std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1));
    let git = |args: &[&str]| {
        let out = std::process::Command::new("git").args(args).output().ok();
        out.map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string()).unwrap_or_default()
    };
    let commit = git(&["rev-parse", "--short", "HEAD"]);
    let changed = if git(&["status", "--porcelain", "--untracked-files=no"]).is_empty() { "" } else { " with changes" };
    let when = chrono::Utc::now().format("%Y-%m-%d %H:%M UTC");
    let file = if engine == "sqlite" { "bench/RESULTS.md".into() } else { format!("bench/RESULTS.{engine}.md") };
    let report = format!(
        "# Benchmark results ({engine})\n\nMeasured by `make bench` on {when}: {machine}, {engine}, the release build \
         of commit {commit}{changed}. Each figure is compared with a baseline measured in the same run; ratios, not \
         absolute numbers, are the claim.\n\n{table}"
    );
    (file, report)
}

/// `BENCH_DATABASE_URL`, else a new SQLite file under `dir`.
fn database_url(dir: &std::path::Path) -> String {
    std::env::var("BENCH_DATABASE_URL").unwrap_or_else(|_| {
        let path = dir.join("bench.db");
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
        }
        format!("sqlite://{}?mode=rwc", path.display())
    })
}

/// Registrations and step events per second, round by round, against the engine's commit rate.
async fn ingest_table_rows(db: &Db, dir: &std::path::Path) -> anyhow::Result<String> {
    let rounds = setting("BENCH_ROUNDS", ROUNDS);
    Ok(ingest_rows(db.engine(), &ingest::run(db, dir, rounds).await?) + &service_event_row(db.clone(), rounds).await?)
}

/// The fixed-time load on the release binary, then the same comparison with `at_scale` operations more.
async fn load_rows(dir: &std::path::Path, at_scale: usize) -> anyhow::Result<String> {
    let seconds = setting("LOAD_SECONDS", 15);
    let load_clients = setting("LOAD_CLIENTS", 16);
    let l = load::run(dir, load_clients, seconds).await?;
    let row = |what: &str, p: &load::Phase| {
        format!(
            "| load, {what} ({} clients, {} s, release binary): requests/s \
             | {:.0}/s, p50 {:.1} ms, p99 {:.1} ms, {} errors | `GET /healthz` {:.0}/s, p99 {:.1} ms | {:.2} \
             | 0 errors |\n",
            l.clients,
            l.seconds,
            p.requests_per_second,
            p.p50_ms,
            p.p99_ms,
            p.errors,
            l.floor.requests_per_second,
            l.floor.p99_ms,
            p.requests_per_second / l.floor.requests_per_second
        )
    };
    let rows = row("stalled board as a signed-in user (server function, 2,000 stalled)", &l.board)
        + &row("the board's whole page, server-rendered (`GET /`, the same user)", &l.board_page)
        + &row(
            "a bare axum handler reading the board's 50 rows as JSON (its own process, the same database)",
            &l.bare_board,
        )
        + &page_against_bare(
            &format!("2,000 stalled, {} clients, {} s", l.clients, l.seconds),
            &l.board_page,
            &l.bare_board,
        )
        + &format!(
            "| load: server memory (RSS) before → after the load \
             | {:.1} → {:.1} MiB, peak {:.1} MiB | — | {:.2} | — |\n",
            l.rss_before_mib,
            l.rss_after_mib,
            l.rss_peak_mib,
            l.rss_after_mib / l.rss_before_mib
        )
        + &format!("| load: errors of the floor itself | {} | — | — | 0 |\n", l.floor.errors);
    let (page, bare) = load::page_against_bare_at_scale(dir, load_clients, seconds, at_scale).await?;
    let what = format!("{at_scale} operations more, {load_clients} clients, {seconds} s");
    Ok(rows + &page_against_bare(&what, &page, &bare))
}

/// A bulk rerun: its preview against the bare look-ups, its dispatch against the configured rate.
async fn bulk_rows(db: &Db) -> anyhow::Result<String> {
    let b = bulk::run(db.clone(), BULK_OPERATIONS, BULK_PER_MINUTE).await?;
    Ok(format!(
        "| bulk rerun: preview of {} operations (look-ups at the demo systems, plans recorded) | {:.2} s \
         | the same look-ups bare {:.2} s | {:.2} | — |\n\
         | bulk rerun: outside calls made by the preview | {} \
         | one per step with an outside system: {} | {:.2} | 1.00 |\n\
         | bulk rerun: dispatch of {} at a set rate (one dispatcher) | {:.0} a minute | configured {} a minute | {:.2} \
         | ≈ 1.00 |\n",
        b.operations,
        b.preview_seconds,
        b.bare_lookup_seconds,
        b.preview_seconds / b.bare_lookup_seconds,
        b.outside_calls,
        b.expected_calls,
        b.outside_calls as f64 / b.expected_calls as f64,
        b.operations,
        b.achieved_per_minute,
        b.configured_per_minute,
        b.achieved_per_minute / f64::from(b.configured_per_minute),
    ))
}

/// A bulk rerun in stages against the same batch sent all at once (plus the settle times), and how many reruns go
/// out before a batch whose outside system fails stops itself.
async fn canary_rows(db: &Db) -> anyhow::Result<String> {
    let c = canary::run(db.clone(), BULK_OPERATIONS, BULK_PER_MINUTE).await?;
    let settles = (c.stages - 1) as f64 * f64::from(c.settle_seconds);
    Ok(format!(
        "| bulk rerun in {} stages: {} at {} a minute, performed and reported, until all succeeded | {:.1} s \
         | the same sent all at once {:.1} s, plus {} settle times of {} s | {:.2} | ≤ 1.20 |\n\
         | bulk rerun in stages, the order system failing from the {}th rerun: sent before it stopped itself \
         | {} | the canary's size {} | {:.2} | ≤ 1.00 |\n",
        c.stages,
        c.operations,
        c.per_minute,
        c.staged_seconds,
        c.unstaged_seconds,
        c.stages - 1,
        c.settle_seconds,
        c.staged_seconds / (c.unstaged_seconds + settles),
        c.fault_after + 1,
        c.sent_before_stop,
        c.canary_size,
        c.sent_before_stop as f64 / c.canary_size as f64,
    ))
}

/// The board at scale (and the bundle size).
async fn board_rows(db: &Db, at_scale: usize) -> anyhow::Result<String> {
    board::fill(db, at_scale).await?;
    db.optimize().await?; // as the housekeeping does every five minutes
    let (state, base) = start_app(db.clone()).await?;
    let f = board::measure(&state, &base).await?;
    let stalled = at_scale / 10;
    Ok(format!(
        "| stalled board, first page ({at_scale} operations, {stalled} stalled; session, server function, counts): p50 \
         | {:.1} ms | the same rows read and turned into JSON p50 {:.1} ms | {:.1}× | — |\n\
         | stalled board, first page: p95 | {:.1} ms | bare p95 {:.1} ms | {:.1}× | — |\n\
         | stalled board, keyset page {} places down: p50 | {:.1} ms | bare p50 {:.1} ms | {:.1}× | — |\n\
         | stalled board, keyset page {} places down: p95 | {:.1} ms | bare p95 {:.1} ms | {:.1}× | — |\n{}",
        f.first.p50_ms,
        f.first_bare.p50_ms,
        f.first.p50_ms / f.first_bare.p50_ms,
        f.first.p95_ms,
        f.first_bare.p95_ms,
        f.first.p95_ms / f.first_bare.p95_ms,
        f.deep_position,
        f.deep.p50_ms,
        f.deep_bare.p50_ms,
        f.deep.p50_ms / f.deep_bare.p50_ms,
        f.deep_position,
        f.deep.p95_ms,
        f.deep_bare.p95_ms,
        f.deep.p95_ms / f.deep_bare.p95_ms,
        bundle_size(),
    ))
}

/// Approval → dispatch latency with queued approvals, against bare signed POSTs.
async fn dispatch_rows(db: &Db) -> anyhow::Result<String> {
    let (gate, bare) = dispatch::dispatch_latency(db.clone(), QUEUED_APPROVALS).await?;
    Ok(format!(
        "| approval → dispatch latency, {QUEUED_APPROVALS} queued approvals, 4 dispatchers: p50 | {:.0} ms \
         | bare signed POSTs p50 {:.0} ms | {:.1}× | — |\n\
         | approval → dispatch latency, {QUEUED_APPROVALS} queued approvals, 4 dispatchers: p99 | {:.0} ms \
         | bare signed POSTs p99 {:.0} ms | {:.1}× | p99 < 1,000 ms |\n",
        gate.p50_ms,
        bare.p50_ms,
        gate.p50_ms / bare.p50_ms,
        gate.p99_ms,
        bare.p99_ms,
        gate.p99_ms / bare.p99_ms,
    ))
}

/// The audit export against `sqlite3 -csv` (SQLite only: the baseline is that command).
async fn export_row(db: &Db, dir: &std::path::Path) -> anyhow::Result<String> {
    if db.engine() != "sqlite" {
        return Ok(String::new());
    }
    export::fill(db, setting("BENCH_AUDIT_EVENTS", AUDIT_EVENTS)).await?;
    let rows = backend::db::audit::head(&mut db.begin_read().await?).await?.0 as usize;
    let (ours, sqlite3) = export::compare(&dir.join("bench.db").display().to_string(), rows)?;
    Ok(format!(
        "| audit export, CSV, {rows} events (`server audit export`) | {:.0} rows/s, peak RSS {:.1} MiB \
         | `sqlite3 -csv` {:.0} rows/s, {:.1} MiB | {:.2} | ≥ 0.80 and < 64 MiB |\n",
        ours.rows_per_second,
        ours.peak_rss_mib,
        sqlite3.rows_per_second,
        sqlite3.peak_rss_mib,
        ours.rows_per_second / sqlite3.rows_per_second
    ))
}

/// The audit trail's Merkle tree: appends with it against without, then proofs at a million events.
async fn merkle_rows(db: &Db) -> anyhow::Result<String> {
    let m = merkle::run(db, setting("BENCH_AUDIT_EVENTS", AUDIT_EVENTS)).await?;
    let mut rows = format!(
        "| step events through the service, 4 clients, the audit trail's Merkle tree following them \
         | {:.0} events/s | without the tree {:.0} events/s | {:.2} | ≥ 0.95 |\n",
        m.with_tree,
        m.without_tree,
        m.with_tree / m.without_tree
    );
    if let Some(s) = m.at_scale {
        let log2 = 64 - (s.events - 1).leading_zeros();
        rows += &format!(
            "| the Merkle tree made from the {} events of the trail it did not hold yet | {:.1} s ({:.0} events/s) \
             | — | — | — |\n\
             | inclusion proof of one event in {} events: hashes (longest of {}) | {} | ⌈log₂ n⌉ = {log2} | {:.2} \
             | ≤ 21 |\n\
             | inclusion proof of one event in {} events, produced and checked: p99 (p50) | {:.2} ms ({:.2} ms) \
             | reading the event alone p99 {:.2} ms ({:.2} ms) | {:.1}× | ≤ 5 ms |\n\
             | the security guide's Python check of a bundle of one event and its proof | {:.0} ms, {:.0} ms \
             checking | `python3` starting with its modules {:.0} ms | — | ≤ 50 ms checking |\n",
            s.built,
            s.build_seconds,
            s.built as f64 / s.build_seconds,
            s.events,
            s.proofs,
            s.longest_proof,
            s.longest_proof as f64 / f64::from(log2),
            s.events,
            s.proof_p99_ms,
            s.proof_p50_ms,
            s.read_p99_ms,
            s.read_p50_ms,
            s.proof_p99_ms / s.read_p99_ms,
            s.script_ms,
            s.script_ms - s.interpreter_ms,
            s.interpreter_ms,
        );
    }
    Ok(rows)
}

/// The board's whole page against the bare handler under the same load: the rate's ratio (target ≥ 0.3) and the
/// p99's (target ≤ 3×).
fn page_against_bare(what: &str, page: &load::Phase, bare: &load::Phase) -> String {
    format!(
        "| the board's whole page against the bare handler ({what}): requests/s | {:.0}/s, {} errors \
         | bare {:.0}/s, {} errors | {:.2} | ≥ 0.30 |\n\
         | the board's whole page against the bare handler ({what}): p99 | {:.1} ms | bare p99 {:.1} ms | {:.1}× \
         | ≤ 3.0× |\n",
        page.requests_per_second,
        page.errors,
        bare.requests_per_second,
        bare.errors,
        page.requests_per_second / bare.requests_per_second,
        page.p99_ms,
        bare.p99_ms,
        page.p99_ms / bare.p99_ms,
    )
}

/// What every page downloads before it is interactive, as `make release` leaves it: the first wasm module, its
/// JavaScript and the split loader (names carry the build's content hash), raw and gzipped (`gzip -9`, as a server
/// would send them); and the largest page's own chunk.
fn bundle_size() -> String {
    const NOT_BUILT: &str = "| browser bundle (wasm + JS) | not built: run `make release` | — | — | — |\n";
    let files: Vec<_> =
        std::fs::read_dir("target/site/pkg").into_iter().flatten().flatten().map(|e| e.path()).collect();
    let named = |prefix: &str, suffix: &str| {
        files.iter().find(|p| {
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or_default();
            name.starts_with(prefix) && name.ends_with(suffix)
        })
    };
    let first = [named("rerun-gate.", ".wasm"), named("rerun-gate.", ".js"), named("__wasm_split.", ".js")];
    let Some(first) = first.into_iter().collect::<Option<Vec<_>>>() else { return NOT_BUILT.into() };
    let raw: u64 = first.iter().filter_map(|p| std::fs::metadata(p).ok()).map(|m| m.len()).sum();
    let gzipped: u64 = first.iter().map(|p| gzipped_size(p)).sum();
    let largest_chunk = files
        .iter()
        .filter(|p| {
            p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with("split_") && n.ends_with(".wasm"))
        })
        .map(|p| gzipped_size(p))
        .max()
        .unwrap_or(0);
    format!(
        "| browser bundle, first download (wasm + JS + split loader, `make release`) | {raw} bytes \
         | gzip -9: {gzipped} bytes | {:.2} | gzip ≤ 409,600 bytes |\n\
         | browser bundle, the largest page's own chunk | gzip -9: {largest_chunk} bytes | — | — | ≤ 153,600 bytes |\n",
        gzipped as f64 / raw as f64
    )
}

/// A file's size under `gzip -9`; 0 when it cannot be read.
fn gzipped_size(path: &std::path::Path) -> u64 {
    std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("gzip -9c '{}' | wc -c", path.display()))
        .output()
        .ok()
        .and_then(|o| String::from_utf8_lossy(&o.stdout).trim().parse::<u64>().ok())
        .unwrap_or(0)
}

/// The workflow of the bench's operations (the example configuration's).
const WORKFLOW: &str = "order-intake";

/// The registration of one order-intake operation (the example configuration's two steps).
fn order_intake(id: &str) -> serde_json::Value {
    json!({"process_id": id, "workflow": WORKFLOW, "department": "sales",
        "steps": [{"name": "register_order", "idempotency_key": format!("{id}-r")},
                  {"name": "ai_summary", "idempotency_key": format!("{id}-s")}]})
}

/// The app on a free loopback port, as `serve` runs it (without the background workers).
async fn start_app(db: Db) -> anyhow::Result<(backend::AppState, String)> {
    let config = server::startup::load_config(None)?;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    // The bench measures the engine's limit, not the per-client rate limit (QUALITY 15): it is lifted here.
    let mut server_options = ServerOptions::new(&format!("http://{addr}"));
    (server_options.api_rate_per_second, server_options.api_burst) = (1_000_000, 1_000_000);
    let state = server::startup::state(db, Arc::new(SystemClock), server_options, config).await?;
    let mut options = server::startup::leptos_options()?;
    options.site_addr = addr;
    tokio::spawn(server::startup::serve(listener, server::startup::router(state.clone(), options)));
    Ok((state, format!("http://{addr}")))
}

/// The engine's own pace: one row inserted and committed per transaction, one client, outside this app's
/// write order (the writer's permit; on PostgreSQL the audit head's lock, which a step event's time includes).
async fn raw_insert_rate(db: &Db, round: usize) -> anyhow::Result<f64> {
    if round == 0 {
        exec(db, "DROP TABLE IF EXISTS bench_raw").await?; // a database an earlier run wrote to
    }
    let create = "CREATE TABLE IF NOT EXISTS bench_raw (id BIGINT PRIMARY KEY, payload TEXT NOT NULL)";
    exec(db, create).await?;
    let insert = "INSERT INTO bench_raw (id, payload) VALUES ($1, $2)";
    let started = Instant::now();
    for i in round * RAW_INSERTS..(round + 1) * RAW_INSERTS {
        match db {
            Db::Sqlite(pool, ..) => {
                let mut t = pool.begin_with("BEGIN IMMEDIATE").await?;
                sqlx::query(insert).bind(i as i64).bind("step event").execute(&mut *t).await?;
                t.commit().await?;
            }
            Db::Postgres(pool, ..) => {
                let mut t = pool.begin().await?;
                sqlx::query(insert).bind(i as i64).bind("step event").execute(&mut *t).await?;
                t.commit().await?;
            }
        }
    }
    Ok(RAW_INSERTS as f64 / started.elapsed().as_secs_f64())
}

async fn exec(db: &Db, sql: &str) -> anyhow::Result<()> {
    let mut tx = db.begin_write().await?;
    match &mut tx {
        backend::db::Conn::Sqlite(t, _) => {
            sqlx::query(sql).execute(&mut **t).await?;
        }
        backend::db::Conn::Postgres(t, _) => {
            sqlx::query(sql).execute(&mut **t).await?;
        }
    }
    tx.commit().await?;
    Ok(())
}

/// The rows of `ingest::run`: each rate with its spread, next to the same rounds' raw rate.
fn ingest_rows(engine: &str, i: &ingest::Ingest) -> String {
    let spread = |s: ingest::Spread, digits: usize| format!("{:.*}–{:.*}", digits, s.low, digits, s.high);
    let raw = format!("raw INSERT+COMMIT {:.0}/s ({})", i.raw.median, spread(i.raw, 0));
    let events_target = if engine == "sqlite" { "≥ 1.0" } else { "≥ 0.8" };
    format!(
        "| registrations through the API ({engine}, {} clients, release server in its own process, median of {} \
         rounds) | {:.0}/s ({}), p99 {:.0} ms, {} errors | {raw} | {:.2} ({}) | ≥ 0.5 |\n\
         | step events through the API ({engine}, {} clients, the same server and rounds) | {:.0}/s ({}) | {raw} \
         | {:.2} ({}) | {events_target} |\n",
        ingest::REGISTRATION_CLIENTS,
        i.rounds,
        i.registrations.median,
        spread(i.registrations, 0),
        i.registration_p99_ms.median,
        i.registration_errors,
        i.registration_ratio.median,
        spread(i.registration_ratio, 2),
        ingest::EVENT_CLIENTS,
        i.events.median,
        spread(i.events, 0),
        i.event_ratio.median,
        spread(i.event_ratio, 2),
    )
}

/// A new API client of `sales`, as the service sees it once its token is presented.
async fn sales_client(state: &backend::AppState) -> anyhow::Result<backend::services::api_clients::ApiClient> {
    let actor = domain::audit::Actor::system(domain::audit::SystemActor::CommandLine);
    let name = format!("bench-{}", uuid::Uuid::new_v4().simple());
    let (_, token) = backend::services::api_clients::create(state, actor, &name, &["sales".to_string()])
        .await
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let client =
        backend::services::api_clients::authenticate(state, &token).await.map_err(|e| anyhow::anyhow!("{e}"))?;
    client.ok_or_else(|| anyhow::anyhow!("bench token unknown"))
}

/// Step events through the service itself, one client, no HTTP (where the time goes), against the raw rate.
/// `round` numbers the raw rate's rows after the ingestion's rounds.
async fn service_event_row(db: Db, round: usize) -> anyhow::Result<String> {
    let raw = raw_insert_rate(&db, round).await?;
    let (state, _) = start_app(db).await?;
    let client = sales_client(&state).await?;
    let id = format!("BENCH-{}-direct", uuid::Uuid::new_v4().simple());
    backend::services::registration::register(&state, &client, &id, &order_intake(&id))
        .await
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let events = 2_000;
    let started = Instant::now();
    for seq in 1..=events {
        let body = match seq % 2 {
            1 => json!({"seq": seq, "type": "started"}),
            _ => json!({"seq": seq, "type": "failed", "error": {"class": "server_error", "message": "503"}}),
        };
        let event = serde_json::from_value(body)?;
        backend::services::step_events::report(&state, &client, &id, "register_order", event)
            .await
            .map_err(|e| anyhow::anyhow!("{e}"))?;
    }
    let direct = events as f64 / started.elapsed().as_secs_f64();
    Ok(format!(
        "| the same events through the service, no HTTP, 1 client (where the time goes) | {direct:.0} events/s \
         | raw INSERT+COMMIT {raw:.0}/s | {:.2} | — |\n",
        direct / raw
    ))
}
