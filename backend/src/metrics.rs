//! Prometheus metrics (`GET /metrics`, prometheus-client): what the HTTP layer counts as requests go by. The
//! scrape's text, with what the database says at that moment, is `services::metrics`.
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;
use std::time::Duration;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RequestLabels {
    pub method: String,
    /// The route's pattern (`/api/v1/operations/{process_id}`), never the raw path: a bounded set of series.
    pub route: String,
    pub status: u16,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RouteLabels {
    pub method: String,
    pub route: String,
}

/// What this instance saw of HTTP since it started.
#[derive(Clone, Debug)]
pub struct HttpMetrics {
    requests: Family<RequestLabels, Counter>,
    latency: Family<RouteLabels, Histogram>,
}

impl Default for HttpMetrics {
    fn default() -> Self {
        // 5 ms to ~20 s, doubling.
        let buckets: fn() -> Histogram = || Histogram::new(exponential_buckets(0.005, 2.0, 13));
        let latency = Family::new_with_constructor(buckets);
        HttpMetrics { requests: Family::default(), latency }
    }
}

impl HttpMetrics {
    /// Adds what this instance saw to a scrape.
    pub fn register(&self, registry: &mut Registry) {
        registry.register("http_requests", "HTTP requests answered by this instance", self.requests.clone());
        registry.register("http_request_duration_seconds", "Time to answer, by route", self.latency.clone());
    }

    pub fn observe(&self, method: &str, route: &str, status: u16, took: Duration) {
        let (method, route) = (method.to_string(), route.to_string());
        self.requests.get_or_create(&RequestLabels { method: method.clone(), route: route.clone(), status }).inc();
        self.latency.get_or_create(&RouteLabels { method, route }).observe(took.as_secs_f64());
    }
}

/// A histogram of waits (a turn, a connection): 0.1 ms to ~13 s, doubling.
pub fn wait_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.0001, 2.0, 18))
}
