//! Cross-origin refusal, the CSP nonce, security headers and a generic answer to panics.
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, Method, Response, StatusCode, header};
use axum::middleware::Next;
use axum::response::IntoResponse;
use backend::AppState;
use base64::Engine;
use contract::CspNonce;
use rand::RngCore;
use std::any::Any;

/// Routes called by programs with their own credentials, not by browsers with cookies.
fn is_machine_route(path: &str) -> bool {
    path.starts_with("/api/v1/") || path.starts_with("/hooks/")
}

/// Refuses state changes that a browser says come from another site (QUALITY 12). Same rule as Go's
/// `CrossOriginProtection`: `Sec-Fetch-Site` decides when present; else a present `Origin` must be ours;
/// a request with neither does not come from a browser, so no cookie can be abused by it.
pub async fn same_origin_only(State(state): State<AppState>, request: Request, next: Next) -> Response<Body> {
    let safe = matches!(*request.method(), Method::GET | Method::HEAD | Method::OPTIONS);
    if safe || is_machine_route(request.uri().path()) || is_same_origin(&request, &state.server.public_url) {
        return next.run(request).await;
    }
    tracing::warn!(path = %request.uri().path(), "cross-origin request refused");
    (StatusCode::FORBIDDEN, "cross-origin requests are not allowed").into_response()
}

fn is_same_origin(request: &Request, public_url: &str) -> bool {
    let headers = request.headers();
    if let Some(site) = headers.get("sec-fetch-site") {
        return matches!(site.as_bytes(), b"same-origin" | b"none");
    }
    let Some(origin) = headers.get(header::ORIGIN).and_then(|o| o.to_str().ok()) else {
        return true;
    };
    let host = headers.get(header::HOST).and_then(|h| h.to_str().ok()).unwrap_or("");
    origin == public_url || origin.split_once("://").is_some_and(|(_, authority)| authority == host)
}

/// Adds a fresh CSP nonce for the page and the security headers to every response (QUALITY 13–14).
pub async fn headers(State(state): State<AppState>, mut request: Request, next: Next) -> Response<Body> {
    let mut bytes = [0u8; 16];
    rand::thread_rng().fill_bytes(&mut bytes);
    let nonce = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes);
    request.extensions_mut().insert(CspNonce(nonce.clone()));
    let is_asset = request.uri().path().starts_with("/pkg/");

    let mut response = next.run(request).await;
    let csp = format!(
        "default-src 'self'; script-src 'nonce-{nonce}' 'strict-dynamic' 'wasm-unsafe-eval'; \
         style-src 'self'; img-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'none'; \
         frame-ancestors 'none'; form-action 'self'"
    );
    let h = response.headers_mut();
    let mut set = |name: &'static str, value: &str| {
        if let Ok(value) = HeaderValue::from_str(value) {
            h.insert(name, value);
        }
    };
    set("content-security-policy", &csp);
    set("x-content-type-options", "nosniff");
    set("referrer-policy", "same-origin");
    set("x-frame-options", "DENY");
    set("cross-origin-opener-policy", "same-origin");
    if !is_asset {
        set("cache-control", "no-store");
    }
    if state.server.public_url.starts_with("https://") {
        set("strict-transport-security", "max-age=63072000; includeSubDomains");
    }
    response
}

/// A panic is logged with its message; the client only hears that something went wrong (QUALITY 16).
pub fn panic_response(panic: Box<dyn Any + Send + 'static>) -> Response<Body> {
    let message = panic
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| panic.downcast_ref::<&str>().copied())
        .unwrap_or("unknown panic");
    tracing::error!(panic = message, "request handler panicked");
    (
        StatusCode::INTERNAL_SERVER_ERROR,
        [(header::CONTENT_TYPE, "application/problem+json")],
        concat!(
            r#"{"type":"about:blank","title":"Internal Server Error","status":500,"#,
            r#""detail":"something went wrong on our side; it has been logged"}"#
        ),
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_panic_answers_500_without_its_message() {
        let response = panic_response(Box::new("SELECT secret FROM users".to_string()));
        assert_eq!(response.status(), StatusCode::INTERNAL_SERVER_ERROR);
        let body = axum::body::to_bytes(response.into_body(), 4096).await.unwrap();
        let body = String::from_utf8_lossy(&body);
        assert!(!body.contains("SELECT") && body.contains("something went wrong"), "{body}");
    }

    #[test]
    fn machine_routes_are_only_the_token_api_and_webhooks() {
        assert!(is_machine_route("/api/v1/operations"));
        assert!(is_machine_route("/hooks/billing"));
        assert!(!is_machine_route("/api/sign_in"));
        assert!(!is_machine_route("/api/v1"));
    }
}
