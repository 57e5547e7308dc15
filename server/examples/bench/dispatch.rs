//! Approval → dispatch latency: 1,000 approved reruns queued at once, sent by four dispatchers (as four server
//! instances would) to a receiver on loopback; each rerun's latency is from the moment the queue is full to its
//! arrival. Baseline: the same 1,000 signed POSTs sent by four senders with no database work.
use backend::services::{self, Caller};
use backend::{AppState, Db, ServerOptions, SystemClock};
use contract::reruns::StartAnswer;
use domain::audit::Actor;
use serde_json::json;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

const SENDERS: usize = 4;

pub struct Latency {
    pub p50_ms: f64,
    pub p99_ms: f64,
}

type Arrivals = Arc<Mutex<HashMap<String, Instant>>>;

pub(crate) async fn receiver() -> anyhow::Result<(Arrivals, String)> {
    let arrivals: Arrivals = Arc::default();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/rerun", listener.local_addr()?);
    let seen = arrivals.clone();
    let app = axum::Router::new().route(
        "/rerun",
        axum::routing::post(move |headers: axum::http::HeaderMap| {
            let seen = seen.clone();
            async move {
                let id = headers.get("webhook-id").and_then(|v| v.to_str().ok()).unwrap_or_default().to_string();
                seen.lock().unwrap().entry(id).or_insert_with(Instant::now);
                "ok"
            }
        }),
    );
    tokio::spawn(async move { axum::serve(listener, app).await });
    Ok((arrivals, url))
}

fn latency(started: Instant, arrivals: &Arrivals) -> Latency {
    let mut ms: Vec<f64> =
        arrivals.lock().unwrap().values().map(|at| at.duration_since(started).as_secs_f64() * 1000.0).collect();
    ms.sort_by(f64::total_cmp);
    let at = |q: f64| ms[((ms.len() as f64 * q).ceil() as usize).clamp(1, ms.len()) - 1];
    Latency { p50_ms: at(0.50), p99_ms: at(0.99) }
}

async fn caller(state: &AppState, username: &str) -> anyhow::Result<Caller> {
    let mut tx = state.db.begin_read().await?;
    let row =
        backend::db::users::by_username(&mut tx, username).await?.ok_or_else(|| anyhow::anyhow!("no {username}"))?;
    Ok(Caller {
        session: backend::services::session_users::load_session_user(&mut tx, row).await?,
        request_id: None,
        locale: Default::default(),
        authentication: Some(domain::identity::Authentication {
            at: state.clock.now(),
            method: domain::identity::AuthMethod::Password,
        }),
    })
}

pub(crate) fn fail(e: contract::AppError) -> anyhow::Error {
    anyhow::anyhow!("{e}")
}

/// A sales staff member, a sales owner and an API client of sales, new for this run.
pub(crate) async fn people(state: &AppState) -> anyhow::Result<(Caller, Caller, services::api_clients::ApiClient)> {
    let run = uuid::Uuid::new_v4().simple().to_string();
    let (staff, owner) = (format!("s{}", &run[..8]), format!("m{}", &run[..8]));
    for (name, role) in [(&staff, domain::roles::Role::Staff), (&owner, domain::roles::Role::Manager)] {
        let new = contract::admin::NewUser {
            username: name.clone(),
            display_name: name.clone(),
            password: "bench-password-2026-x".into(),
            roles: vec![role],
            departments: vec!["sales".into()],
            ..Default::default()
        };
        services::users::add(state, Actor::system(domain::audit::SystemActor::CommandLine), None, new)
            .await
            .map_err(fail)?;
    }
    let (staff, owner) = (caller(state, &staff).await?, caller(state, &owner).await?);
    let (client_id, _) = services::api_clients::create(
        state,
        Actor::system(domain::audit::SystemActor::CommandLine),
        &format!("b{run}"),
        &["sales".into()],
    )
    .await
    .map_err(fail)?;
    let client = services::api_clients::ApiClient {
        id: client_id,
        name: format!("b{run}"),
        departments: vec!["sales".into()],
        purpose: domain::directory::ClientPurpose::Ingestion,
    };
    Ok((staff, owner, client))
}

/// How long the queue may take to drain before the run fails.
const DRAIN_LIMIT: std::time::Duration = std::time::Duration::from_secs(600);

/// Returns the gate's latency and the baseline's.
pub async fn dispatch_latency(db: Db, reruns: usize) -> anyhow::Result<(Latency, Latency)> {
    let (arrivals, url) = receiver().await?;
    let mut config = server::startup::load_config(None)?;
    for w in &mut config.workflows {
        (w.rerun_url, w.rerun_allow_loopback) = (url.clone(), true);
    }
    let state =
        server::startup::state(db, Arc::new(SystemClock), ServerOptions::new("http://127.0.0.1:1"), config).await?;
    approve_reruns(&state, reruns).await?;
    // The queue is full: four dispatchers drain it.
    let started = Instant::now();
    let mut senders = Vec::new();
    for _ in 0..SENDERS {
        let (state, arrivals) = (state.clone(), arrivals.clone());
        senders.push(tokio::spawn(async move {
            loop {
                let arrived = arrivals.lock().unwrap().len();
                if arrived >= reruns {
                    break;
                }
                // A queue that stops draining (a pause left by an earlier part) fails the run instead of hanging it.
                let limit = DRAIN_LIMIT.as_secs();
                anyhow::ensure!(started.elapsed() < DRAIN_LIMIT, "{arrived} of {reruns} reruns arrived in {limit} s");
                if services::dispatcher::dispatch_due(&state).await.map_err(fail)? == 0 {
                    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
                }
            }
            Ok::<(), anyhow::Error>(())
        }));
    }
    for sender in senders {
        sender.await??;
    }
    let gate = latency(started, &arrivals);
    Ok((gate, bare_posts(reruns).await?))
}

/// `reruns` stalled operations whose steps the demo systems prove not executed, each approved for a rerun.
async fn approve_reruns(state: &AppState, reruns: usize) -> anyhow::Result<()> {
    let (staff, owner, client) = people(state).await?;
    let run = uuid::Uuid::new_v4().simple().to_string();
    let ids: Vec<String> = (0..reruns).map(|i| format!("LAT-{run}-{i}")).collect();
    for id in &ids {
        let body = super::order_intake(id);
        services::registration::register(state, &client, id, &body).await.map_err(fail)?;
        let failed = serde_json::from_value(
            json!({"seq": 1, "type": "failed", "error": {"class": "server_error", "message": "503"}}),
        )?;
        services::step_events::report(state, &client, id, "register_order", failed).await.map_err(fail)?;
    }
    services::sweeper::sweep(state).await.map_err(fail)?;
    for id in &ids {
        let StartAnswer::Created { id: request } =
            services::rerun_requests::start(state, &staff, id, "bench").await.map_err(fail)?
        else {
            anyhow::bail!("{id}: no plan")
        };
        for n in 1..=5 {
            let cause =
                services::rerun_requests::Cause { class: Some("system_error".into()), text: Some("bench".into()) };
            services::rerun_requests::confirm(state, &staff, &request, n, "ok", cause).await.map_err(fail)?;
        }
        services::rerun_requests::submit(state, &staff, &request).await.map_err(fail)?;
        services::approvals::decide(state, &owner, &request, domain::approval::Decision::Approve, "")
            .await
            .map_err(fail)?;
    }
    Ok(())
}

/// The baseline: the same number of signed POSTs, four senders, no database.
async fn bare_posts(reruns: usize) -> anyhow::Result<Latency> {
    let (bare_arrivals, bare_url) = receiver().await?;
    backend::reconciliation::ssrf::install_tls_provider();
    let http = reqwest::Client::new();
    let secret = domain::webhooks::Secret::parse(&std::env::var("RERUN_GATE_SECRET_ORDER_INTAKE")?)
        .map_err(|e| anyhow::anyhow!(e))?;
    let secret = Arc::new(secret);
    let started = Instant::now();
    let mut senders = Vec::new();
    for s in 0..SENDERS {
        let (http, url, secret) = (http.clone(), bare_url.clone(), secret.clone());
        let mine: Vec<String> = (0..reruns).filter(|i| i % SENDERS == s).map(|i| format!("bare-{i}")).collect();
        senders.push(tokio::spawn(async move {
            for id in mine {
                let body = json!({"type": "rerun.approved", "rerun_id": id}).to_string();
                let now = chrono::Utc::now().timestamp();
                http.post(&url)
                    .header("webhook-id", &id)
                    .header("webhook-timestamp", now.to_string())
                    .header("webhook-signature", secret.sign(&id, now, body.as_bytes()))
                    .body(body)
                    .send()
                    .await?;
            }
            Ok::<(), anyhow::Error>(())
        }));
    }
    for sender in senders {
        sender.await??;
    }
    Ok(latency(started, &bare_arrivals))
}
