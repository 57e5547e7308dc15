//! Company sign-in through the identity provider (OpenID Connect):
//! - `GET /sign-in/oidc?next=…[&fresh=true]` sends the browser to the provider; what it needs to come back (state,
//!   nonce, PKCE verifier, where to return) waits in its session;
//! - `GET /sign-in/oidc/callback` signs the person in (`services::company_sign_in`) and returns them;
//! - `GET /sign-in/again[?next=…]` is where a decision that needs a recent sign-in sends the browser (back to `next`
//!   or the page it came from): through the provider again with `max_age=0`, or to the password form for a local
//!   account.
//!
//! A failure sends the browser to the sign-in page with `problem=failed`, `problem=no_role` or
//! `problem=access_ended` (disabled, or made inactive by the directory); the cause is logged.
use crate::http::policy::route;
use axum::Router;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use backend::AppState;
use backend::auth::{self, AuthSession};
use backend::oidc::{Identity, Pending, Provider};
use backend::services::company_sign_in;
use contract::AppError;
use domain::identity::{
    AuthMethod, Authentication, NotFresh, fresh_enough, is_local_path, provider_sign_in_at, query_value,
};
use serde::Deserialize;

/// The session's key for the sign-in under way at the provider.
const PENDING: &str = "oidc_pending";

pub fn routes(state: AppState) -> Router {
    let router = route(Router::new(), Method::GET, "/sign-in/oidc", begin);
    let router = route(router, Method::GET, backend::oidc::SIGN_IN_CALLBACK, callback);
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
    match off_to(&provider, &auth, PENDING, (&return_to, fresh_at)).await {
        Ok(to_provider) => to_provider,
        Err(cause) => failed(&cause, "failed"),
    }
}

/// Sends the browser to `provider`; what it needs to come back waits in its session under `key`.
pub(crate) async fn off_to(
    provider: &Provider,
    auth: &AuthSession,
    key: &str,
    (return_to, fresh_at): (&str, Option<chrono::DateTime<chrono::Utc>>),
) -> Result<Response, String> {
    let (url, pending) = provider.begin(return_to, fresh_at).await.map_err(|problem| problem.to_string())?;
    auth.session.insert(key, &pending).await.map_err(|error| error.to_string())?;
    Ok(Redirect::to(&url).into_response())
}

/// What the provider sent the browser back with.
#[derive(Deserialize)]
pub(crate) struct Back {
    code: Option<String>,
    state: Option<String>,
    error: Option<String>,
}

/// Who the provider vouches for, coming back to the sign-in this browser started (under `key` in its session:
/// taken out at once, so that it comes back once), with its code and state.
pub(crate) async fn back_from(
    provider: &Provider,
    auth: &AuthSession,
    key: &str,
    back: Back,
) -> Result<(Identity, Pending), String> {
    let pending: Option<Pending> = auth.session.remove(key).await.ok().flatten();
    let pending = pending.ok_or("nothing was started at the provider in this browser")?;
    let (Some(code), Some(returned_state)) = (back.code, back.state) else {
        return Err(format!("the provider answered {}", back.error.unwrap_or_default()));
    };
    let identity = provider.finish(&pending, &code, &returned_state).await.map_err(|problem| problem.to_string())?;
    Ok((identity, pending))
}

async fn callback(
    State(state): State<AppState>,
    mut auth: AuthSession,
    headers: HeaderMap,
    Query(back): Query<Back>,
) -> Response {
    let Some(provider) = state.oidc.clone() else { return StatusCode::NOT_FOUND.into_response() };
    let (identity, pending) = match back_from(&provider, &auth, PENDING, back).await {
        Ok(back) => back,
        Err(cause) => return failed(&cause, "failed"),
    };
    let request_id = headers.get("x-request-id").and_then(|v| v.to_str().ok());
    let user = match company_sign_in::sign_in(&state, &identity, request_id).await {
        Ok(user) => user,
        Err(AppError::Forbidden) => return failed(&format!("{} has no role here", identity.username), "no_role"),
        Err(AppError::Unauthorized) => {
            return failed(&format!("{}'s access here was ended", identity.username), "access_ended");
        }
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
        // The person signing in again is the one signed in: their sign-in name is filled in for them.
        let username = auth.user.as_ref().map(|u| query_value(&u.user.username)).unwrap_or_default();
        Redirect::to(&format!("/sign-in?again=true&username={username}&next={next}")).into_response()
    }
}

/// The sign-in page, saying that it did not work; the cause goes to the log only.
fn failed(cause: &str, problem: &str) -> Response {
    tracing::warn!(cause, "company sign-in failed");
    Redirect::to(&format!("/sign-in?problem={problem}")).into_response()
}
