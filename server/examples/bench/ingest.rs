//! Ingestion at the engine's limit (issue 27): registrations (16 clients) and step events (8 clients) through the
//! ingestion API of the release server, in a process of its own so that the load generator never shares its
//! runtime or its threads' turns; each round next to the engine's raw INSERT+COMMIT rate measured in the same
//! round. `ROUNDS` rounds; medians and their spread.
use super::load::{Phase, fresh_database, phase, start_server, wait_ready};
use anyhow::Context;
use backend::{Db, ServerOptions, SystemClock};
use serde_json::json;
use std::sync::Arc;
use std::time::{Duration, Instant};

pub const REGISTRATION_CLIENTS: usize = 16;
pub const EVENT_CLIENTS: usize = 8;
/// How long each round registers; the operations it registers are the ones its step events then move.
const REGISTRATION_SECONDS: u64 = 5;
/// Operations whose steps get events in a round (each step 10 events: 4,000 a round).
const EVENT_OPERATIONS: usize = 200;
const EVENTS_PER_STEP: usize = 10;

/// A figure over the rounds: the median and the lowest and highest.
#[derive(Clone, Copy, Debug)]
pub struct Spread {
    pub median: f64,
    pub low: f64,
    pub high: f64,
}

impl Spread {
    pub fn of(mut values: Vec<f64>) -> Spread {
        values.sort_by(f64::total_cmp);
        Spread { median: values[values.len() / 2], low: values[0], high: values[values.len() - 1] }
    }
}

pub struct Ingest {
    pub rounds: usize,
    pub raw: Spread,
    pub registrations: Spread,
    /// Each round's registration rate over the same round's raw rate.
    pub registration_ratio: Spread,
    pub registration_errors: usize,
    pub registration_p99_ms: Spread,
    pub events: Spread,
    pub event_ratio: Spread,
}

/// `bench_db` is the bench's own database of the engine (where the raw rate is measured); `url` is where the
/// server writes: a fresh SQLite file beside it, or the same PostgreSQL database.
pub async fn run(bench_db: &Db, dir: &std::path::Path, rounds: usize) -> anyhow::Result<Ingest> {
    let url = match bench_db {
        Db::Sqlite(..) => fresh_database(dir, "ingest.db"),
        Db::Postgres(..) => std::env::var("BENCH_DATABASE_URL")?,
    };
    let db = server::startup::open_database(&url).await?;
    let token = api_token(db.clone()).await?;
    db.close().await;
    let (server, base) = start_server(&url)?;
    let _server = Stopped(server);
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(REGISTRATION_CLIENTS)
        .timeout(Duration::from_secs(30))
        .build()?;
    wait_ready(&http, &format!("{base}/readyz")).await;

    let (mut raw, mut registrations, mut registration_ratio, mut events, mut event_ratio, mut p99) =
        (vec![], vec![], vec![], vec![], vec![], vec![]);
    let mut registration_errors = 0;
    for round in 0..rounds {
        let baseline = super::raw_insert_rate(bench_db, round).await?;
        let run = format!("{}-{round}", uuid::Uuid::new_v4().simple());
        let registered = register(&http, &base, &token, &run).await;
        registration_errors += registered.errors;
        let rate = event_rate(&http, &base, &token, &run).await?;
        raw.push(baseline);
        registrations.push(registered.requests_per_second);
        registration_ratio.push(registered.requests_per_second / baseline);
        p99.push(registered.p99_ms);
        events.push(rate);
        event_ratio.push(rate / baseline);
    }
    Ok(Ingest {
        rounds,
        raw: Spread::of(raw),
        registrations: Spread::of(registrations),
        registration_ratio: Spread::of(registration_ratio),
        registration_errors,
        registration_p99_ms: Spread::of(p99),
        events: Spread::of(events),
        event_ratio: Spread::of(event_ratio),
    })
}

/// Ends the server's process with the bench, however it ends.
struct Stopped(std::process::Child);

impl Drop for Stopped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn operation_id(run: &str, client: usize, n: usize) -> String {
    format!("ING-{run}-{client}-{n}")
}

/// Registrations for `REGISTRATION_SECONDS`, each client its own operations (`ING-<run>-<client>-<n>`).
async fn register(http: &reqwest::Client, base: &str, token: &str, run: &str) -> Phase {
    let request = |client, n| {
        let id = operation_id(run, client, n);
        http.post(format!("{base}/api/v1/operations"))
            .bearer_auth(token)
            .header("idempotency-key", &id)
            .json(&super::order_intake(&id))
            .send()
    };
    phase(REGISTRATION_CLIENTS, REGISTRATION_SECONDS, request, 201).await
}

/// Step events for the first `EVENT_OPERATIONS` operations this round registered, each client a slice of them so
/// that `seq` grows per step as a real integration's would; every event a change, so every one is audited.
async fn event_rate(http: &reqwest::Client, base: &str, token: &str, run: &str) -> anyhow::Result<f64> {
    // The first operations of every registering client (each registered at least EVENT_OPERATIONS / 16).
    let ids: Vec<String> =
        (0..EVENT_OPERATIONS).map(|i| operation_id(run, i % REGISTRATION_CLIENTS, i / REGISTRATION_CLIENTS)).collect();
    let started = Instant::now();
    let mut workers = Vec::new();
    for chunk in ids.chunks(EVENT_OPERATIONS.div_ceil(EVENT_CLIENTS)) {
        let (http, base, token, chunk) = (http.clone(), base.to_string(), token.to_string(), chunk.to_vec());
        workers.push(tokio::spawn(async move {
            let mut sent = 0usize;
            for id in &chunk {
                for step in ["register_order", "ai_summary"] {
                    for seq in 1..=EVENTS_PER_STEP {
                        let body = match (seq == EVENTS_PER_STEP, seq % 2) {
                            (true, _) => json!({"seq": seq, "type": "succeeded", "result_id": format!("{id}-{step}")}),
                            (false, 1) => json!({"seq": seq, "type": "started"}),
                            _ => json!({
                                "seq": seq,
                                "type": "failed",
                                "error": {"class": "server_error", "message": "503"},
                            }),
                        };
                        let url = format!("{base}/api/v1/operations/{id}/steps/{step}/events");
                        let answer = http.post(url).bearer_auth(&token).json(&body).send().await?;
                        let status = answer.status();
                        anyhow::ensure!(
                            status.is_success(),
                            "event for {id} failed: {status} {}",
                            answer.text().await?
                        );
                        sent += 1;
                    }
                }
            }
            Ok::<usize, anyhow::Error>(sent)
        }));
    }
    let mut sent = 0;
    for worker in workers {
        sent += worker.await??;
    }
    Ok(sent as f64 / started.elapsed().as_secs_f64())
}

/// An API token of `sales`, made in the server's database before the server starts.
async fn api_token(db: Db) -> anyhow::Result<String> {
    let config = server::startup::load_config(None)?;
    let state =
        server::startup::state(db, Arc::new(SystemClock), ServerOptions::new("http://127.0.0.1"), config).await?;
    let actor = domain::audit::Actor::system(domain::audit::SystemActor::CommandLine);
    let name = format!("ingest-{}", uuid::Uuid::new_v4().simple());
    let (_, token) = backend::services::api_clients::create(&state, actor, &name, &["sales".to_string()])
        .await
        .map_err(|e| anyhow::anyhow!("{e}"))
        .context("the ingestion token")?;
    Ok(token)
}
