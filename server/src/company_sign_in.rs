//! Company sign-in through the identity provider (OpenID Connect):
//! - `GET /sign-in/oidc?next=…[&fresh=true]` sends the browser to the provider; what it needs to come back (state,
//!   nonce, PKCE verifier, where to return) waits in its session;
//! - `GET /sign-in/oidc/callback` signs the person in (`services::company_sign_in`) and returns them;
//! - `GET /sign-in/again[?next=…]` is where a decision that needs a recent sign-in sends the browser (back to `next`
//!   or the page it came from): through the provider again with `max_age=0`, or to the password form for a local
//!   account.
//!
//! A failure sends the browser to the sign-in page with `problem=failed` or `problem=no_role`; the cause is logged.
use crate::http::policy::route;
use app::api::AppError;
use app::backend::AppState;
use app::backend::auth::{self, AuthSession};
use app::backend::oidc::Pending;
use app::backend::services::company_sign_in;
use app::domain::identity::{
    AuthMethod, Authentication, NotFresh, fresh_enough, is_local_path, provider_sign_in_at, query_value,
};
use axum::Router;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use serde::Deserialize;

/// The session's key for the sign-in under way at the provider.
const PENDING: &str = "oidc_pending";

pub fn routes(state: AppState) -> Router {
    let router = route(Router::new(), Method::GET, "/sign-in/oidc", begin);
    let router = route(router, Method::GET, "/sign-in/oidc/callback", callback);
    route(router, Method::GET, "/sign-in/again", again).with_state(state)
}

#[derive(Deserialize)]
struct Begin {
    next: Option<String>,
    #[serde(default)]
    fresh: bool,
}

async fn begin(State(state): State<AppState>, auth: AuthSession, Query(query): Query<Begin>) -> Response {
    let Some(provider) = state.oidc.clone() else { return StatusCode::NOT_FOUND.into_response() };
    let return_to = query.next.filter(|p| is_local_path(p)).unwrap_or_else(|| "/".into());
    // A decision's fresh sign-in: the provider must authenticate the person now, whatever its own session says.
    let fresh_at = query.fresh.then(|| state.clock.now());
    let (url, pending) = match provider.begin(&return_to, fresh_at).await {
        Ok(begun) => begun,
        Err(problem) => return failed(&problem.to_string(), "failed"),
    };
    if let Err(error) = auth.session.insert(PENDING, &pending).await {
        return failed(&error.to_string(), "failed");
    }
    Redirect::to(&url).into_response()
}

#[derive(Deserialize)]
struct Back {
    code: Option<String>,
    state: Option<String>,
    error: Option<String>,
}

async fn callback(
    State(state): State<AppState>,
    mut auth: AuthSession,
    headers: HeaderMap,
    Query(back): Query<Back>,
) -> Response {
    let Some(provider) = state.oidc.clone() else { return StatusCode::NOT_FOUND.into_response() };
    // Taken out at once: a sign-in started here comes back once.
    let pending: Option<Pending> = auth.session.remove(PENDING).await.ok().flatten();
    let Some(pending) = pending else { return failed("no sign-in was started in this browser", "failed") };
    let (Some(code), Some(returned_state)) = (back.code, back.state) else {
        return failed(&format!("the provider answered {}", back.error.unwrap_or_default()), "failed");
    };
    let identity = match provider.finish(&pending, &code, &returned_state).await {
        Ok(identity) => identity,
        Err(problem) => return failed(&problem.to_string(), "failed"),
    };
    let request_id = headers.get("x-request-id").and_then(|v| v.to_str().ok());
    let user = match company_sign_in::sign_in(&state, &identity, request_id).await {
        Ok(user) => user,
        Err(AppError::Forbidden) => return failed(&format!("{} has no role here", identity.username), "no_role"),
        Err(error) => return failed(&error.to_string(), "failed"),
    };
    let now = state.clock.now();
    // When the person authenticated at the provider, not when they came back: a decision needs it recent. A
    // fresh sign-in proves it only with an `auth_time` from when it was asked (QUALITY 11a); without one the
    // person is signed in, but not freshly.
    let fresh = provider_sign_in_at(identity.auth_time, pending.fresh_asked_at);
    let at = fresh.unwrap_or(chrono::DateTime::UNIX_EPOCH);
    let method = AuthMethod::Provider { amr: identity.amr.clone(), acr: identity.acr.clone() };
    let authenticated = Authentication { at, method };
    if let Err(error) = auth::start_session(&mut auth, &user, &state, &authenticated).await {
        return failed(&error.to_string(), "failed");
    }
    if fresh == Err(NotFresh::AuthTimeMissing) {
        let cause = "the ID token has no auth_time claim after max_age=0: enable it at the identity provider \
                     (Microsoft Entra ID: the optional claim auth_time)";
        return failed(cause, "auth_time_missing");
    }
    if pending.fresh_asked_at.is_some() && !fresh_enough(&authenticated, now, state.config.sign_in.fresh_window()) {
        // Sending them back would only ask again, and again.
        return failed("the provider did not authenticate the person again (max_age=0)", "not_again");
    }
    if pending.fresh_asked_at.is_some() && !provider.config().decision.met_by(&authenticated.method) {
        let cause = "the provider's answer lacks what decisions need (decision_acr_values, decision_amr)";
        return failed(cause, "not_strong");
    }
    let mut response = Redirect::to(&pending.return_to).into_response();
    for cookie in app::api::preference_cookies(&user.user.language, Some(&user.user.time_zone)) {
        response.headers_mut().append(header::SET_COOKIE, cookie);
    }
    response
}

#[derive(Deserialize)]
struct Again {
    next: Option<String>,
}

async fn again(
    State(state): State<AppState>,
    auth: AuthSession,
    headers: HeaderMap,
    Query(query): Query<Again>,
) -> Response {
    // Back to the page of the decision: named in `next`, or the page the browser came from.
    let referrer = || {
        let page = headers.get(header::REFERER)?.to_str().ok()?.strip_prefix(&state.server.public_url)?;
        Some(page.to_string())
    };
    let next = query.next.or_else(referrer).filter(|p| is_local_path(p)).unwrap_or_else(|| "/".into());
    let next = query_value(&next);
    let through_provider =
        matches!(auth::authentication(&auth).await, Some(Authentication { method: AuthMethod::Provider { .. }, .. }));
    if through_provider && state.oidc.is_some() {
        Redirect::to(&format!("/sign-in/oidc?fresh=true&next={next}")).into_response()
    } else {
        Redirect::to(&format!("/sign-in?again=true&next={next}")).into_response()
    }
}

/// The sign-in page, saying that it did not work; the cause goes to the log only.
fn failed(cause: &str, problem: &str) -> Response {
    tracing::warn!(cause, "company sign-in failed");
    Redirect::to(&format!("/sign-in?problem={problem}")).into_response()
}
