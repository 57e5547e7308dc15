//! The text a Prometheus server scrapes (`GET /metrics`): this instance's HTTP counts (`crate::metrics`) and what
//! the database says at the moment of the scrape (so that every instance reports the same totals).
use super::audit_proof::signer;
use crate::{AppState, db};
use contract::AppError;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct EventLabels {
    event: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StatusLabels {
    status: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct LookUpLabels {
    connector: String,
    verdict: String,
}

/// The text a Prometheus server scrapes (OpenMetrics text format).
pub async fn render(state: &AppState) -> Result<String, AppError> {
    let mut tx = state.db.begin_read().await?;
    let snapshot = db::metrics::snapshot(&mut tx).await?;
    drop(tx);

    let mut registry = Registry::with_prefix("rerun_gate");
    state.metrics.register(&mut registry);

    let stalled = Family::<EventLabels, Gauge>::default();
    for (event, n) in snapshot.stalled_by_event {
        stalled.get_or_create(&EventLabels { event }).set(n);
    }
    registry.register("stalled_operations", "Stalled operations, by event", stalled);
    let pending = Gauge::<i64>::default();
    pending.set(snapshot.pending_approvals);
    registry.register("pending_approvals", "Rerun requests waiting for approval", pending);
    let dispatches = Family::<StatusLabels, Gauge>::default();
    for (status, n) in snapshot.dispatches_by_status {
        dispatches.get_or_create(&StatusLabels { status }).set(n);
    }
    registry.register("dispatches", "Rerun dispatches, by outcome (pending, sent, failed, unknown)", dispatches);
    let look_ups = Family::<LookUpLabels, Counter>::default();
    for (connector, verdict, n) in snapshot.look_ups {
        look_ups.get_or_create(&LookUpLabels { connector, verdict }).inc_by(n.max(0) as u64);
    }
    registry.register("reconciliations", "Look-ups at the outside systems, by connector and verdict", look_ups);
    let broken = Gauge::<i64>::default();
    broken.set(i64::from(signer(state).alarm().is_some()));
    registry.register("audit_trail_broken", "1 while the audit signer's alarm stands: nothing is signed", broken);

    let mut text = String::new();
    encode(&mut text, &registry).map_err(|e| AppError::internal("metrics encoding", e))?;
    Ok(text)
}
