//! Protections every response passes through (QUALITY 12–16), and the small non-page routes.
pub mod admission;
pub mod assets;
pub mod health;
pub mod metrics;
pub mod policy;
pub mod security;

use axum::Router;
use axum::http::{HeaderName, StatusCode, header};
use backend::AppState;
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::limit::RequestBodyLimitLayer;
use tower_http::request_id::{MakeRequestUuid, PropagateRequestIdLayer, SetRequestIdLayer};
use tower_http::sensitive_headers::{SetSensitiveRequestHeadersLayer, SetSensitiveResponseHeadersLayer};
use tower_http::timeout::TimeoutLayer;
use tower_http::trace::TraceLayer;

/// Browser forms and server functions are small; anything bigger is refused with 413.
pub const BODY_LIMIT_BYTES: usize = 64 * 1024;
/// How much of a refused body is read and thrown away before the 413 (see `drain_refused_bodies`).
const DRAIN_LIMIT_BYTES: usize = 1024 * 1024;

pub fn protect(router: Router, state: AppState) -> Router {
    let request_id = HeaderName::from_static("x-request-id");
    let timeout = state.server.request_timeout;
    router
        .layer(axum::middleware::from_fn_with_state(state.clone(), security::same_origin_only))
        .layer(axum::middleware::from_fn_with_state(state, security::headers))
        .layer(RequestBodyLimitLayer::new(BODY_LIMIT_BYTES))
        .layer(axum::middleware::from_fn(drain_refused_bodies))
        .layer(TimeoutLayer::with_status_code(StatusCode::REQUEST_TIMEOUT, timeout))
        .layer(CatchPanicLayer::custom(security::panic_response))
        .layer(TraceLayer::new_for_http().make_span_with(crate::telemetry::request_span))
        .layer(PropagateRequestIdLayer::new(request_id.clone()))
        .layer(SetRequestIdLayer::new(request_id, MakeRequestUuid))
        .layer(axum::middleware::from_fn(plain_request_id_only))
        .layer(SetSensitiveResponseHeadersLayer::new([header::SET_COOKIE]))
        .layer(SetSensitiveRequestHeadersLayer::new([header::AUTHORIZATION, header::COOKIE]))
}

/// The pages, the server functions' answers and the documents, gzipped for a browser that accepts it: the board's
/// page shrinks by 13 KiB, 60 ms of a slow phone's line that the wasm shares. The site's files come compressed
/// already (`assets`) and are left as they are. Safe from BREACH: no answer repeats a secret across answers (the
/// CSP nonce is new every time; the same-origin check reads headers, not a token in the page).
pub fn compress_pages() -> tower_http::compression::CompressionLayer {
    tower_http::compression::CompressionLayer::new().gzip(true)
}

/// A body declared bigger than the limit is read and thrown away (up to a megabyte, within the request timeout)
/// before the limit answers 413: closing a connection with unread data makes the kernel reset it, and a client
/// still sending would see a broken connection instead of the 413 (what web servers call a lingering close).
async fn drain_refused_bodies(
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    use futures::StreamExt;
    let declared = request.headers().get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()?.parse::<usize>().ok());
    if declared.is_none_or(|length| length <= BODY_LIMIT_BYTES || length > DRAIN_LIMIT_BYTES) {
        return next.run(request).await;
    }
    let (parts, body) = request.into_parts();
    let mut chunks = body.into_data_stream();
    while let Some(Ok(_)) = chunks.next().await {}
    next.run(axum::extract::Request::from_parts(parts, axum::body::Body::empty())).await
}

/// A client's `X-Request-Id` that is not short and plain is dropped, and a fresh one is generated in its place.
async fn plain_request_id_only(
    mut request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    let plain = |v: &axum::http::HeaderValue| v.to_str().is_ok_and(domain::ids::is_plain_request_id);
    if request.headers().get("x-request-id").is_some_and(|v| !plain(v)) {
        request.headers_mut().remove("x-request-id");
    }
    next.run(request).await
}
