//! Bulk reruns: the preview (look-ups at the demo outside systems, every plan computed and recorded) of 1,000
//! stalled operations against the same look-ups made bare (no recording, no plans) at the same concurrency; the
//! outside calls it made against one per step with an outside system; and the dispatch of the 1,000 approved
//! at a set rate by one dispatcher as `serve` runs it, achieved rate against the configured one.
use super::dispatch::{fail, people, receiver};
use backend::services::{self, Caller, reconciliation};
use backend::{AppState, Db, ServerOptions, SystemClock};
use contract::batches::Selection;
use futures::StreamExt;
use serde_json::json;
use std::sync::Arc;
use std::time::Instant;

pub struct Bulk {
    pub operations: usize,
    pub preview_seconds: f64,
    pub bare_lookup_seconds: f64,
    pub outside_calls: i64,
    pub expected_calls: usize,
    pub configured_per_minute: u32,
    pub achieved_per_minute: f64,
}

pub async fn run(db: Db, operations: usize, per_minute: u32) -> anyhow::Result<Bulk> {
    let (arrivals, url) = receiver().await?;
    let mut config = server::startup::load_config(None)?;
    // Sent all at once (`canary.rs` measures the stages): the receiver here performs nothing to prove a stage.
    for w in &mut config.workflows {
        (w.rerun_url, w.rerun_allow_loopback, w.canary) = (url.clone(), true, None);
    }
    config.bulk_dispatch_per_minute = per_minute;
    let concurrency = config.bulk_lookup_concurrency as usize;
    let state =
        server::startup::state(db, Arc::new(SystemClock), ServerOptions::new("http://127.0.0.1:1"), config).await?;
    let (staff, owner, client) = people(&state).await?;
    let run = uuid::Uuid::new_v4().simple().to_string();
    // 1,000 order intakes stalled by the same outage (their first step answered 503).
    let ids: Vec<String> = (0..operations).map(|i| format!("BULK-{run}-{i}")).collect();
    for id in &ids {
        services::registration::register(&state, &client, id, &super::order_intake(id)).await.map_err(fail)?;
        let failed = serde_json::from_value(
            json!({"seq": 1, "type": "failed", "error": {"class": "server_error", "message": "503"}}),
        )?;
        services::step_events::report(&state, &client, id, "register_order", failed).await.map_err(fail)?;
    }
    services::sweeper::sweep(&state).await.map_err(fail)?;
    let bare_lookup_seconds = bare_look_ups(&state, &ids, concurrency).await?;
    let before = calls(&state.db).await?;

    // The preview: created from ticked process IDs, measured until every plan is recorded.
    let started = Instant::now();
    let selection = Selection { process_ids: ids.clone(), ..Selection::default() };
    let batch = services::batches::create(&state, &staff, selection, "bench: an outage").await.map_err(fail)?;
    let view = loop {
        let view = services::batches::view(&state, &staff, &batch).await.map_err(fail)?;
        if view.status.as_str() != "previewing" {
            break view;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    };
    let preview_seconds = started.elapsed().as_secs_f64();
    let outside_calls = calls(&state.db).await? - before;
    anyhow::ensure!(view.eligible == operations, "{} of {operations} eligible", view.eligible);

    // Requested, checked, approved; one dispatcher sends them at the configured rate.
    approve(&state, (&staff, &owner), &batch).await?;
    let dispatcher = server::startup::spawn_dispatcher(state.clone());
    while arrivals.lock().unwrap().len() < operations {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    state.begin_stopping();
    let _ = dispatcher.await;
    let mut times: Vec<Instant> = arrivals.lock().unwrap().values().copied().collect();
    times.sort();
    let span = times[times.len() - 1].duration_since(times[0]).as_secs_f64();
    Ok(Bulk {
        operations,
        preview_seconds,
        bare_lookup_seconds,
        outside_calls,
        expected_calls: operations * 2,
        configured_per_minute: per_minute,
        achieved_per_minute: (operations - 1) as f64 / span * 60.0,
    })
}

/// Baseline: the same look-ups, bare, at the same concurrency; the seconds they took.
async fn bare_look_ups(state: &AppState, ids: &[String], concurrency: usize) -> anyhow::Result<f64> {
    let mut rows = Vec::new();
    let mut tx = state.db.begin_read().await?;
    for id in ids {
        rows.push(backend::db::operations::by_process_id(&mut tx, id).await?.ok_or_else(|| anyhow::anyhow!("{id}"))?);
    }
    drop(tx);
    let started = Instant::now();
    let looked: Vec<_> = futures::stream::iter(&rows)
        .map(|op| reconciliation::look(state, op))
        .buffer_unordered(concurrency)
        .collect()
        .await;
    anyhow::ensure!(looked.iter().all(|l| l.is_ok()), "a bare look-up failed");
    Ok(started.elapsed().as_secs_f64())
}

/// The batch requested and checked by staff, approved by its owner.
pub(crate) async fn approve(state: &AppState, (staff, owner): (&Caller, &Caller), batch: &str) -> anyhow::Result<()> {
    services::batches::request(state, staff, batch, None).await.map_err(fail)?;
    for n in 1..=5 {
        let cause = services::rerun_requests::Cause {
            class: Some("outside_service_outage".into()),
            text: Some("bench".into()),
        };
        services::batches::confirm(state, staff, batch, n, "ok", cause).await.map_err(fail)?;
    }
    services::batches::submit(state, staff, batch).await.map_err(fail)?;
    services::batches::decide(state, owner, batch, true, "").await.map_err(fail)?;
    Ok(())
}

/// Look-ups recorded so far: each is one call to an outside system.
async fn calls(db: &Db) -> anyhow::Result<i64> {
    let sql = "SELECT COUNT(*) FROM reconciliations";
    let mut tx = db.begin_read().await?;
    Ok(match &mut tx {
        backend::db::Conn::Sqlite(t, _) => sqlx::query_scalar(sql).fetch_one(&mut **t).await?,
        backend::db::Conn::Postgres(t, _) => sqlx::query_scalar(sql).fetch_one(&mut **t).await?,
    })
}
