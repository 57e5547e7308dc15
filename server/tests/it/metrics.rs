//! `/metrics`: Prometheus text that a scraper can read, with the requests, stalled operations, approvals,
//! dispatches and look-ups; only for a loopback scraper or one with the token.
use crate::harness::TestApp;
use chrono::Duration;
use prometheus_parse::{Sample, Scrape, Value};
use reqwest::StatusCode;

async fn scrape(app: &TestApp, token: Option<&str>) -> (StatusCode, String) {
    let mut request = app.http.get(format!("{}/metrics", app.url));
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let answer = request.send().await.unwrap();
    (answer.status(), answer.text().await.unwrap())
}

fn parse(text: &str) -> Vec<Sample> {
    Scrape::parse(text.lines().map(|l| Ok(l.to_string()))).expect("Prometheus text").samples
}

fn value(samples: &[Sample], name: &str, label: (&str, &str)) -> Option<f64> {
    samples.iter().find(|s| s.metric == name && s.labels.get(label.0) == Some(label.1)).map(|s| match s.value {
        Value::Counter(v) | Value::Gauge(v) | Value::Untyped(v) => v,
        _ => f64::NAN,
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_parse_as_prometheus_text_and_count_requests_stalled_operations_and_look_ups() {
    let app = TestApp::spawn().await;
    app.clock.advance(Duration::hours(2));
    backend::demo::load_if_empty(&app.state).await.unwrap().unwrap();
    backend::services::sweeper::sweep(&app.state).await.unwrap();
    for _ in 0..3 {
        app.http.get(format!("{}/healthz", app.url)).send().await.unwrap();
    }
    let (status, text) = scrape(&app, None).await;
    assert_eq!(status, StatusCode::OK, "{text}");
    let samples = parse(&text);
    assert_eq!(value(&samples, "rerun_gate_http_requests_total", ("route", "/healthz")), Some(3.0), "{text}");
    let latency = samples
        .iter()
        .find(|s| s.metric == "rerun_gate_http_request_duration_seconds" && s.labels.get("route") == Some("/healthz"));
    assert!(matches!(latency.map(|s| &s.value), Some(Value::Histogram(_))), "latency histogram: {text}");
    assert_eq!(value(&samples, "rerun_gate_stalled_operations", ("event", "partial_success")), Some(1.0), "{text}");
    assert!(
        value(&samples, "rerun_gate_reconciliations_total", ("verdict", "executed")).unwrap_or(0.0) >= 1.0,
        "{text}"
    );
    assert!(text.contains("rerun_gate_pending_approvals 0"), "{text}");
    // The raw path of a request never becomes a label.
    assert!(!text.contains("ORD-1002"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_a_token_configured_metrics_answer_only_the_bearer_of_it() {
    let app = TestApp::spawn_with(|s| s.metrics_token = Some("scrape-me-2026".to_string().into())).await;
    assert_eq!(scrape(&app, None).await.0, StatusCode::FORBIDDEN);
    assert_eq!(scrape(&app, Some("wrong")).await.0, StatusCode::FORBIDDEN);
    assert_eq!(scrape(&app, Some("scrape-me-2026")).await.0, StatusCode::OK);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_token_a_request_that_came_through_a_reverse_proxy_is_refused_even_from_loopback() {
    let app = TestApp::spawn().await;
    assert_eq!(scrape(&app, None).await.0, StatusCode::OK, "a scraper on this host");
    let proxied =
        app.http.get(format!("{}/metrics", app.url)).header("x-forwarded-for", "203.0.113.5").send().await.unwrap();
    assert_eq!(proxied.status(), StatusCode::FORBIDDEN, "a proxy on this host makes every client look local");
}
