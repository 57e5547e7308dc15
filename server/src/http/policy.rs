//! The gate in front of every route: `app::api::policy::POLICY` says who may call it. A route missing from
//! the table is refused (deny by default); a route that needs a session is refused before its handler runs
//! when the signed-in user holds none of the roles it names. Every route the server registers is noted here,
//! so that the policy test can call each one.
use crate::api::problem::Problem;
use app::api::policy;
use axum::Router;
use axum::body::Body;
use axum::extract::{MatchedPath, Request};
use axum::handler::Handler;
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{MethodFilter, on};
use backend::auth::AuthSession;
use contract::AppError;
use domain::access::{Entry, Kind};
use std::collections::BTreeSet;
use std::sync::Mutex;

static REGISTERED: Mutex<BTreeSet<(String, String)>> = Mutex::new(BTreeSet::new());

/// Notes a route the router serves (method, axum pattern).
pub fn note(method: &str, path: &str) {
    REGISTERED.lock().unwrap_or_else(|e| e.into_inner()).insert((method.to_string(), path.to_string()));
}

/// Every route noted since the process started (the union over the routers built in it).
pub fn registered() -> Vec<(String, String)> {
    REGISTERED.lock().unwrap_or_else(|e| e.into_inner()).iter().cloned().collect()
}

fn is_method_missing(method: &str, path: &str) -> bool {
    let method = if method == "HEAD" { "GET" } else { method };
    let registered = REGISTERED.lock().unwrap_or_else(|e| e.into_inner());
    registered.iter().any(|(_, p)| p == path) && !registered.contains(&(method.to_string(), path.to_string()))
}

/// Adds a hand-written route and notes it: every `route` of the server goes through here.
pub fn route<S, H, T>(router: Router<S>, method: Method, path: &'static str, handler: H) -> Router<S>
where
    S: Clone + Send + Sync + 'static,
    H: Handler<T, S>,
    T: 'static,
{
    note(method.as_str(), path);
    let filter = MethodFilter::try_from(method).expect("a routable method");
    router.route(path, on(filter, handler))
}

/// Middleware (as a route layer, inside the session layer on the browser side).
pub async fn gate(request: Request, next: Next) -> Response {
    // Unmatched requests (static files, unknown paths) go to the fallback, which serves files or 404.
    let Some(pattern) = request.extensions().get::<MatchedPath>().map(|p| p.as_str().to_string()) else {
        return next.run(request).await;
    };
    let Some(entry) = policy::entry(request.method().as_str(), &pattern) else {
        // A known route asked with a method it does not have: the router answers 405 with the methods it has.
        if is_method_missing(request.method().as_str(), &pattern) {
            return next.run(request).await;
        }
        tracing::error!(method = %request.method(), route = %pattern, "route missing from the policy table: refused");
        return StatusCode::NOT_FOUND.into_response();
    };
    if let Some(signed_in) = already_signed_in(&pattern, &request) {
        return signed_in;
    }
    if entry.allowed.needs_session() {
        let user = request.extensions().get::<AuthSession>().and_then(|auth| auth.user.clone()).map(|s| s.user);
        let refusal = match user {
            None => Some(AppError::Unauthorized),
            Some(user) if entry.allowed.admits_user(&user.roles) => None,
            Some(user) => {
                tracing::warn!(user = %user.username, route = %pattern, "access denied by the policy table");
                Some(AppError::Forbidden)
            }
        };
        if let Some(refusal) = refusal {
            return refuse(entry, &request, refusal);
        }
    }
    let response = next.run(request).await;
    if entry.kind == Kind::ServerFn { with_error_status(response).await } else { response }
}

/// The sign-in page asked by someone signed in already (a press of サインイン before the page was interactive
/// posted the form without the page's script, and the server function sent the browser back here): on to where
/// they were going, not an empty form. Signing in again for a decision (`again`) still shows the form.
fn already_signed_in(pattern: &str, request: &Request) -> Option<Response> {
    if pattern != "/sign-in" || request.method() != Method::GET {
        return None;
    }
    request.extensions().get::<AuthSession>()?.user.as_ref()?;
    let query = axum::extract::Query::<std::collections::HashMap<String, String>>::try_from_uri(request.uri());
    let query = query.map(|q| q.0).unwrap_or_default();
    if query.contains_key("again") || query.contains_key("problem") {
        return None;
    }
    let next = query.get("next").filter(|p| domain::identity::is_local_path(p)).map_or("/", String::as_str);
    Some(axum::response::Redirect::to(next).into_response())
}

/// A refusal in the form the caller of that kind of route understands.
fn refuse(entry: &Entry, request: &Request, error: AppError) -> Response {
    match entry.kind {
        // Sent to sign in, and brought back afterwards to the page they asked for.
        kind if kind.sends_to_sign_in() => backend::auth::send_to_sign_in(request.uri()),
        Kind::ServerFn => server_fn_error(request.uri().path(), &error),
        _ => Problem(error).into_response(),
    }
}

/// The answer a server function gives for an error: its JSON, the status, and the header Leptos' client reads.
pub(crate) fn server_fn_error(path: &str, error: &AppError) -> Response {
    let body = serde_json::to_vec(error).unwrap_or_default();
    let mut response =
        (StatusCode::from_u16(error.status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR), body).into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    if let Ok(path) = HeaderValue::from_str(path) {
        headers.insert(leptos::server_fn::error::SERVER_FN_ERROR_HEADER, path);
    }
    response
}

/// Leptos answers every server-function error with 500, including arguments it could not read; the error's own
/// status (422 for unreadable arguments) is what a program calling it should see.
async fn with_error_status(response: Response) -> Response {
    let is_fn_error = response.headers().contains_key(leptos::server_fn::error::SERVER_FN_ERROR_HEADER);
    if !is_fn_error || response.status() != StatusCode::INTERNAL_SERVER_ERROR {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, 64 * 1024).await else {
        return (StatusCode::INTERNAL_SERVER_ERROR, "something went wrong on our side; it has been logged")
            .into_response();
    };
    if let Ok(error) = serde_json::from_slice::<AppError>(&bytes) {
        parts.status = StatusCode::from_u16(error.status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    }
    Response::from_parts(parts, Body::from(bytes))
}

#[cfg(test)]
mod tests {
    /// A route added with `Router::route` directly would be served but never noted (the policy test would not
    /// call it): every module adds its routes through `policy::route`.
    #[test]
    fn no_module_adds_a_route_past_the_policy() {
        let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut offenders = Vec::new();
        let mut stack = vec![src];
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(dir).unwrap().flatten() {
                let path = entry.path();
                if path.is_dir() {
                    stack.push(path);
                } else if path.extension().is_some_and(|e| e == "rs") && !path.ends_with("http/policy.rs") {
                    let text = std::fs::read_to_string(&path).unwrap();
                    if text.contains(".route(\"") || text.contains(".route_service(") || text.contains(".nest(") {
                        offenders.push(path.display().to_string());
                    }
                }
            }
        }
        assert!(offenders.is_empty(), "routes added past the policy: {offenders:?}");
    }
}
