//! `GET /metrics` for Prometheus, and the middleware that counts every request by its route.
use crate::http::policy::route;
use axum::Router;
use axum::extract::{ConnectInfo, MatchedPath, Request, State};
use axum::http::Method;
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use backend::AppState;
use secrecy::ExposeSecret;
use sha2::{Digest, Sha256};
use std::net::SocketAddr;
use std::time::Instant;

pub fn routes(state: AppState) -> Router {
    route(Router::new(), Method::GET, "/metrics", scrape).with_state(state)
}

/// Counts the request under its route's pattern, never the raw path: a bounded set of series.
pub async fn count(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let started = Instant::now();
    let method = request.method().as_str().to_string();
    let route = request.extensions().get::<MatchedPath>().map_or("unmatched", |p| p.as_str()).to_string();
    let response = next.run(request).await;
    state.metrics.observe(&method, &route, response.status().as_u16(), started.elapsed());
    response
}

/// With `RERUN_GATE_METRICS_TOKEN` set, the scraper sends it as a bearer token; without, only loopback
/// clients (a Prometheus on the same host, or through a tunnel) are answered, and never a request that came
/// through a reverse proxy (it carries `X-Forwarded-For`): a proxy on this host would make every client loopback.
async fn scrape(
    State(state): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
) -> Response {
    let allowed = match &state.server.metrics_token {
        Some(token) => {
            let given = headers
                .get(header::AUTHORIZATION)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.strip_prefix("Bearer "));
            // Compared as digests: the time taken says nothing about how much of the token was right.
            given.is_some_and(|g| Sha256::digest(g.as_bytes()) == Sha256::digest(token.expose_secret().as_bytes()))
        }
        None => peer.ip().is_loopback() && !headers.contains_key("x-forwarded-for"),
    };
    if !allowed {
        return (
            StatusCode::FORBIDDEN,
            "metrics need RERUN_GATE_METRICS_TOKEN as a bearer token, or a loopback client",
        )
            .into_response();
    }
    match backend::services::metrics::render(&state).await {
        Ok(text) => ([(header::CONTENT_TYPE, "application/openmetrics-text; version=1.0.0; charset=utf-8")], text)
            .into_response(),
        Err(_) => StatusCode::INTERNAL_SERVER_ERROR.into_response(),
    }
}
