//! The text a Prometheus server scrapes (`GET /metrics`): this instance's HTTP counts (`crate::metrics`) and what
//! the database says at the moment of the scrape (so that every instance reports the same totals).
use super::audit_proof::signer;
use crate::{AppState, db};
use contract::AppError;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::encoding::text::encode;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
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
    registry.register_collector(Box::new(Load::of(state)));
    let broken = Gauge::<i64>::default();
    broken.set(i64::from(signer(state).alarm().is_some()));
    registry.register("audit_trail_broken", "1 while the audit signer's alarm stands: nothing is signed", broken);

    let mut text = String::new();
    encode(&mut text, &registry).map_err(|e| AppError::internal("metrics encoding", e))?;
    Ok(text)
}

/// How saturated this instance is: each kind of request's turns (waits, requests shed) and each pool's waits.
#[derive(Debug)]
struct Load {
    kinds: Vec<(&'static str, Histogram, Counter)>,
    pools: Vec<(&'static str, Histogram)>,
}

impl Load {
    fn of(state: &AppState) -> Self {
        let admission = &state.admission;
        let kinds = [
            ("pages", &admission.pages),
            ("calls", &admission.calls),
            ("api", &admission.api),
            ("exports", &admission.exports),
        ];
        Load {
            kinds: kinds.into_iter().map(|(kind, t)| (kind, t.waits.clone(), t.refused.clone())).collect(),
            pools: state
                .pools()
                .into_iter()
                .map(|db| (db.pool_watch().kind.as_str(), db.pool_watch().waits.clone()))
                .collect(),
        }
    }
}

impl Collector for Load {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let help = "Time a request waited for its turn, by kind of request (pages, calls, api, exports)";
        let mut family = encoder.encode_descriptor("admission_wait_seconds", help, None, MetricType::Histogram)?;
        for (kind, waits, _) in &self.kinds {
            waits.encode(family.encode_family(&[("kind", *kind)])?)?;
        }
        let help = "Requests answered 503 at once because every turn and place in the queue was taken, by kind";
        let mut family = encoder.encode_descriptor("requests_shed", help, None, MetricType::Counter)?;
        for (kind, _, shed) in &self.kinds {
            shed.encode(family.encode_family(&[("kind", *kind)])?)?;
        }
        let help = "Time an acquire waited for a database connection, by pool (work, pages, exports)";
        let mut family = encoder.encode_descriptor("pool_wait_seconds", help, None, MetricType::Histogram)?;
        for (pool, waits) in &self.pools {
            waits.encode(family.encode_family(&[("pool", *pool)])?)?;
        }
        Ok(())
    }
}
