//! Structured logs with the request ID on every line; cookies and tokens never appear (marked sensitive).
use axum::http::Request;
use tracing::Span;
use tracing_subscriber::EnvFilter;

/// JSON lines when `RERUN_GATE_LOG_FORMAT=json`, readable text otherwise; level from `RUST_LOG`.
pub fn init() {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info,sqlx=warn"));
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr);
    let result = if std::env::var("RERUN_GATE_LOG_FORMAT").as_deref() == Ok("json") {
        builder.json().try_init()
    } else {
        builder.try_init()
    };
    let _ = result; // already set (tests start several apps in one process)
}

/// For tests: the same format, written through the test harness so it shows only for failing tests.
pub fn init_for_tests() {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info,sqlx=warn"));
    let _ = tracing_subscriber::fmt().with_env_filter(filter).with_test_writer().try_init();
}

/// The span of one request: method, path without the query string, and the request ID.
pub fn request_span<B>(request: &Request<B>) -> Span {
    let request_id = request.headers().get("x-request-id").and_then(|v| v.to_str().ok()).unwrap_or("-");
    tracing::info_span!("request", method = %request.method(), path = %request.uri().path(), request_id = %request_id)
}
