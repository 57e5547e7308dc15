//! Bulk reruns in stages: 1,000 stalled operations sent at a set rate in stages (a canary of 5 %, to 25 %, the
//! rest; the outside systems asked again 20 s after each stage reported) against the same batch sent all at once,
//! both to an integration that performs each rerun at the demo outside systems and reports it, as a real one
//! would; and the same batch in stages with the order system failing from its 11th rerun on: how many reruns went
//! out before the batch stopped itself, against the canary's size.
use super::dispatch::{fail, people};
use backend::demo::systems::{DemoSystems, Service};
use backend::services::{self, Caller, api_clients::ApiClient};
use backend::{AppState, Db, ServerOptions, SystemClock};
use contract::batches::Selection;
use contract::rerun_call::RerunCall;
use domain::batches::Progress;
use domain::canary::CanaryConfig;
use domain::stop_switch::Scope;
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

const SETTLE_SECONDS: u32 = 20;

pub struct Canary {
    pub operations: usize,
    pub per_minute: u32,
    pub staged_seconds: f64,
    pub unstaged_seconds: f64,
    /// How many stages the staged batch ran in (each after the first waited `SETTLE_SECONDS`).
    pub stages: usize,
    pub settle_seconds: u32,
    pub canary_size: usize,
    pub fault_after: usize,
    pub sent_before_stop: usize,
}

pub async fn run(db: Db, operations: usize, per_minute: u32) -> anyhow::Result<Canary> {
    let staged = CanaryConfig { settle_seconds: SETTLE_SECONDS, ..CanaryConfig::default() };
    let unstaged_seconds = batch(&db, (operations, per_minute), None, None).await?.seconds;
    let healthy = batch(&db, (operations, per_minute), Some(staged.clone()), None).await?;
    let fault_after = 10;
    let faulty = batch(&db, (operations, per_minute), Some(staged.clone()), Some(fault_after)).await?;
    let stages = staged.stage_ends(operations);
    Ok(Canary {
        operations,
        per_minute,
        staged_seconds: healthy.seconds,
        unstaged_seconds,
        stages: stages.len(),
        settle_seconds: SETTLE_SECONDS,
        canary_size: stages[0],
        fault_after,
        sent_before_stop: faulty.sent,
    })
}

struct Ran {
    /// From the approval until every rerun was reported done (or, with a fault, until the batch stopped).
    seconds: f64,
    sent: usize,
}

/// One batch of `operations` fresh stalled orders, approved and dispatched at `per_minute`, its stages checked
/// every 2 s as `serve` does; the order system fails from the rerun after `fault_after` on.
async fn batch(
    db: &Db,
    (operations, per_minute): (usize, u32),
    stages: Option<CanaryConfig>,
    fault_after: Option<usize>,
) -> anyhow::Result<Ran> {
    let performer =
        Arc::new(Performer { state: std::sync::OnceLock::new(), fault_after, arrived: AtomicUsize::new(0) });
    let url = serve(performer.clone()).await?;
    let mut config = server::startup::load_config(None)?;
    for w in &mut config.workflows {
        (w.rerun_url, w.rerun_allow_loopback, w.canary) = (url.clone(), true, stages.clone());
    }
    config.bulk_dispatch_per_minute = per_minute;
    let clock = Arc::new(SystemClock);
    let state = server::startup::state(db.clone(), clock, ServerOptions::new("http://127.0.0.1:1"), config).await?;
    let (staff, owner, client) = people(&state).await?;
    let _ = performer.state.set((state.clone(), client.clone()));
    let id = stalled_batch(&state, (&staff, &owner), &client, operations).await?;
    let started = Instant::now();
    let dispatcher = server::startup::spawn_dispatcher(state.clone());
    let checker = {
        let state = state.clone();
        tokio::spawn(async move {
            loop {
                let _ = services::batches::check_stages(&state).await;
                tokio::time::sleep(Duration::from_secs(2)).await;
            }
        })
    };
    loop {
        let progress = services::batches::progress(&state, &staff, &id).await.map_err(fail)?;
        let succeeded = progress.progress.iter().find(|(p, _)| *p == Progress::Succeeded).map_or(0, |(_, n)| *n);
        if succeeded as usize == operations {
            break;
        }
        if progress.status.as_str() == "paused" {
            let stages = progress.stages.map(|s| s.stages).unwrap_or_default();
            let failures: Vec<_> = stages.iter().flat_map(|s| s.failures.iter().take(3)).collect();
            anyhow::ensure!(fault_after.is_some(), "the healthy batch stopped itself: {failures:?}");
            break;
        }
        anyhow::ensure!(started.elapsed() < Duration::from_secs(1800), "the batch did not finish in 30 minutes");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let seconds = started.elapsed().as_secs_f64();
    tokio::time::sleep(Duration::from_secs(3)).await; // anything still on its way arrives
    checker.abort();
    state.begin_stopping();
    let _ = dispatcher.await;
    if fault_after.is_some() {
        // The batch that stopped itself paused its workflow; its owner resumes it as after a real incident, or
        // every rerun of the parts after this one would be held.
        let why = "the bench's stopped batch is over";
        services::stop_switch::resume(&state, &owner, Scope::Workflow, super::WORKFLOW, why).await.map_err(fail)?;
    }
    Ok(Ran { seconds, sent: performer.arrived.load(Ordering::SeqCst) })
}

/// Orders stalled by an outage (their first step answered 503), selected, requested, checked and approved.
async fn stalled_batch(
    state: &AppState,
    (staff, owner): (&Caller, &Caller),
    client: &ApiClient,
    operations: usize,
) -> anyhow::Result<String> {
    let run = uuid::Uuid::new_v4().simple().to_string();
    let ids: Vec<String> = (0..operations).map(|i| format!("CAN-{}-{i}", &run[..8])).collect();
    for id in &ids {
        let steps: Vec<Value> = ["register_order", "ai_summary"]
            .iter()
            .map(|s| json!({"name": s, "idempotency_key": format!("{id}-{s}"), "content": content()}))
            .collect();
        let body = json!({"process_id": id, "workflow": super::WORKFLOW, "department": "sales", "steps": steps});
        services::registration::register(state, client, id, &body).await.map_err(fail)?;
        let failed = json!({"seq": 1, "type": "failed", "error": {"class": "server_error", "message": "503"}});
        services::step_events::report(state, client, id, "register_order", serde_json::from_value(failed)?)
            .await
            .map_err(fail)?;
    }
    services::sweeper::sweep(state).await.map_err(fail)?;
    let selection = Selection { process_ids: ids, ..Selection::default() };
    let id = services::batches::create(state, staff, selection, "bench: stages").await.map_err(fail)?;
    while services::batches::view(state, staff, &id).await.map_err(fail)?.status.as_str() == "previewing" {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    super::bulk::approve(state, (staff, owner), &id).await?;
    Ok(id)
}

fn content() -> Value {
    json!({"item": "デスク", "amount": 52000})
}

/// The integration: it performs each rerun at the demo outside systems and reports each step, or, past
/// `fault_after` reruns, reports the order system's 503.
struct Performer {
    state: std::sync::OnceLock<(AppState, ApiClient)>,
    fault_after: Option<usize>,
    arrived: AtomicUsize,
}

async fn serve(performer: Arc<Performer>) -> anyhow::Result<String> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/rerun", listener.local_addr()?);
    let app = axum::Router::new().route(
        "/rerun",
        axum::routing::post(move |body: axum::body::Bytes| {
            let performer = performer.clone();
            async move {
                let turn = performer.arrived.fetch_add(1, Ordering::SeqCst) + 1;
                if let Ok(call) = serde_json::from_slice::<RerunCall>(&body) {
                    tokio::spawn(async move { performer.perform(&call, turn).await });
                }
                "ok"
            }
        }),
    );
    tokio::spawn(async move { axum::serve(listener, app).await });
    Ok(url)
}

impl Performer {
    async fn perform(&self, call: &RerunCall, turn: usize) {
        let Some((state, client)) = self.state.get() else { return };
        let outside = DemoSystems::new(state.db.clone(), state.clock.clone());
        let failing = self.fault_after.is_some_and(|after| turn > after);
        for step in &call.steps {
            let (service, first) = if step.name == "register_order" { (Service::Orders, 2) } else { (Service::Ai, 1) };
            let report = |event: Value| async move {
                let event = serde_json::from_value(event).expect("a step event");
                let _ = services::step_events::report(state, client, &call.process_id, &step.name, event).await;
            };
            report(json!({"seq": first, "type": "started"})).await;
            if failing {
                let error = json!({"class": "server_error", "message": "503 (bench: the fault)"});
                report(json!({"seq": first + 1, "type": "failed", "error": error})).await;
                return;
            }
            if outside.execute(service, &step.idempotency_key, &content(), Some(&call.process_id)).await.is_err() {
                return;
            }
            report(json!({"seq": first + 1, "type": "succeeded"})).await;
        }
    }
}
