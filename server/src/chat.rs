//! Decisions in Slack and Teams:
//! - `POST /hooks/slack/interactions`: Slack's request signature is checked before anything reads the body; a
//!   request seen before (a retry, a replay: the same timestamp and body) is answered and decides nothing; Slack is
//!   answered at once and the press is handled after (`services::chat::on_interaction`), within its three seconds.
//!   A reject modal whose comment cannot be a reason stays open with the problem under it.
//! - `POST /hooks/teams/messages`: the Teams bot's messaging endpoint: its token, channel (`msteams`), tenant and
//!   service URL checked first (`backend::teams`), each activity decided once.
//! - `GET /account/slack/link` sends a person with a recent sign-in to Sign in with Slack; `GET
//!   /account/slack/callback` links the Slack account it vouches for to theirs (`services::chat::link`).
use crate::api::problem::Problem;
use crate::company_sign_in::{Back, back_from, off_to};
use crate::http::policy::route;
use axum::Json;
use axum::Router;
use axum::body::Bytes;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use backend::AppState;
use backend::auth::{self, AuthSession};
use backend::services::{Caller, chat};
use backend::slack::{self, Interaction};
use contract::AppError;
use domain::chat::{ChatPlatform, ChatUser, slack_request_key, verify_slack};

use backend::auth::{CHAT_LINK_PENDING as PENDING, CHAT_LINK_STARTED_BY as STARTED_BY};

pub fn routes(state: AppState) -> Router {
    let router = route(Router::new(), Method::POST, "/hooks/slack/interactions", interactions);
    route(router, Method::POST, "/hooks/teams/messages", teams_activity).with_state(state)
}

/// An activity from Teams (the Bot Framework's messaging endpoint): its token is checked before the activity is
/// acted on; a press of a decision card is decided at once, and Teams gets the card as it is now to show everyone,
/// or the reason nothing was decided. Other activities are acknowledged.
async fn teams_activity(State(state): State<AppState>, headers: HeaderMap, body: Bytes) -> Response {
    let Some(teams) = state.teams.clone() else { return Problem(AppError::Unauthorized).into_response() };
    let Ok(activity) = serde_json::from_slice::<serde_json::Value>(&body) else {
        return Problem(AppError::BadRequest("the activity is not JSON".into())).into_response();
    };
    let authorization = headers.get("authorization").and_then(|v| v.to_str().ok());
    let believed_until = match teams.verify(authorization, &activity, state.clock.now()).await {
        Ok(until) => until,
        Err(problem) => {
            tracing::warn!(why = problem.why, "a Teams activity refused: it is not to be believed");
            return Problem(AppError::Unauthorized).into_response();
        }
    };
    // One activity decides once: its ID is remembered as long as its token could be believed, and at least a day,
    // so that a replay under a newer token finds it too.
    let believed_until = believed_until.max(state.clock.now() + chrono::Duration::days(1));
    let Some(id) = activity["id"].as_str().filter(|id| !id.is_empty()) else {
        return Problem(AppError::BadRequest("the activity has no ID".into())).into_response();
    };
    match chat::first_time(&state, &format!("teams:{id}"), believed_until).await {
        Ok(true) => {}
        Ok(false) => {
            tracing::warn!("a Teams activity received again: nothing more is done");
            return StatusCode::OK.into_response();
        }
        Err(error) => return Problem(error).into_response(),
    }
    match backend::teams::execute(&activity) {
        Some(pressed) => Json(chat::on_teams_press(&state, pressed).await).into_response(),
        None => StatusCode::OK.into_response(),
    }
}

/// The browser side (sessions).
pub fn account_routes(state: AppState) -> Router {
    let router = route(Router::new(), Method::GET, "/account/slack/link", begin_link);
    route(router, Method::GET, backend::oidc::SLACK_LINK_CALLBACK, finish_link).with_state(state)
}

async fn interactions(State(state): State<AppState>, headers: HeaderMap, body: Bytes) -> Response {
    // Without a Slack app there is no secret a request could be signed with.
    let Some(slack) = state.slack.clone() else { return Problem(AppError::Unauthorized).into_response() };
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let signed = (header("x-slack-request-timestamp"), header("x-slack-signature"));
    if let Err(error) = verify_slack(slack.signing_secret(), signed, &body, state.clock.now()) {
        tracing::warn!(%error, "a Slack interaction refused: signature check failed");
        return Problem(AppError::Unauthorized).into_response();
    }
    let believed = chrono::Duration::seconds(domain::chat::SLACK_REMEMBERED_SECONDS);
    let key = slack_request_key(signed.0.unwrap_or_default(), &body);
    match chat::first_time(&state, &key, state.clock.now() + believed).await {
        Ok(true) => {}
        Ok(false) => {
            tracing::info!("a Slack interaction received again: nothing more is done");
            return StatusCode::OK.into_response();
        }
        Err(error) => return Problem(error).into_response(),
    }
    let interaction = match slack::interaction(&body) {
        Ok(interaction) => interaction,
        Err(why) => return Problem(AppError::BadRequest(why)).into_response(),
    };
    if let Interaction::Rejected { who, comment, .. } = &interaction
        && let Some(problem) = chat::comment_problem(&state, who, comment).await
    {
        return Json(slack::modal_error(&problem)).into_response();
    }
    tokio::spawn(async move { chat::on_interaction(&state, interaction).await });
    StatusCode::OK.into_response()
}

async fn caller(auth: &AuthSession, headers: &HeaderMap) -> Result<Caller, AppError> {
    let user = auth.user.clone().ok_or(AppError::Unauthorized)?;
    let request_id = headers.get("x-request-id").and_then(|v| v.to_str().ok()).map(str::to_string);
    let authentication = auth::authentication(auth).await;
    Ok(Caller { session: user, request_id, locale: app::api::locale_of(headers), authentication })
}

/// Off to Slack, once the person's sign-in here is recent (else they sign in again and come back here).
async fn begin_link(State(state): State<AppState>, auth: AuthSession, headers: HeaderMap) -> Response {
    let Some(provider) = state.slack_sign_in.clone() else { return StatusCode::NOT_FOUND.into_response() };
    let caller = match caller(&auth, &headers).await {
        Ok(caller) => caller,
        Err(error) => return Problem(error).into_response(),
    };
    let Ok(signed_in) = caller.fresh_sign_in(&state).map(|a| a.at) else {
        return Redirect::to("/sign-in/again?next=%2Faccount%2Fslack%2Flink").into_response();
    };
    // The link belongs to this person and this sign-in: the callback refuses anyone else.
    if let Err(error) = auth.session.insert(STARTED_BY, (caller.user_id(), signed_in)).await {
        return not_linked(&error.to_string(), "failed");
    }
    match off_to(&provider, &auth, PENDING, ("/account", None)).await {
        Ok(to_slack) => to_slack,
        Err(cause) => not_linked(&cause, "failed"),
    }
}

async fn finish_link(
    State(state): State<AppState>,
    auth: AuthSession,
    headers: HeaderMap,
    Query(back): Query<Back>,
) -> Response {
    let Some(provider) = state.slack_sign_in.clone() else { return StatusCode::NOT_FOUND.into_response() };
    let identity = match back_from(&provider, &auth, PENDING, back).await {
        Ok((identity, _)) => identity,
        Err(cause) => return not_linked(&cause, "failed"),
    };
    let Some(team_id) = identity.team.clone() else {
        return not_linked("Slack's ID token names no workspace (https://slack.com/team_id)", "failed");
    };
    let who = ChatUser { platform: ChatPlatform::Slack, team_id, user_id: identity.subject.clone() };
    let started_by: Option<(i64, chrono::DateTime<chrono::Utc>)> = auth.session.remove(STARTED_BY).await.ok().flatten();
    let linked = match caller(&auth, &headers).await {
        Ok(caller) if started_by == Some((caller.user_id(), caller_signed_in_at(&caller))) => {
            chat::link(&state, &caller, &who).await
        }
        Ok(_) => return not_linked("the link was started by another person or another sign-in", "failed"),
        Err(error) => Err(error),
    };
    match linked {
        Ok(()) => Redirect::to("/account?chat=linked").into_response(),
        Err(AppError::SignInAgain) => Redirect::to("/sign-in/again?next=%2Faccount%2Fslack%2Flink").into_response(),
        Err(AppError::Conflict { .. }) => not_linked("the Slack account is linked to another user", "taken"),
        Err(error) => not_linked(&error.to_string(), "failed"),
    }
}

/// When the caller's sign-in happened (the epoch for a session from before it was noted).
fn caller_signed_in_at(caller: &Caller) -> chrono::DateTime<chrono::Utc> {
    caller.authentication.as_ref().map_or(chrono::DateTime::UNIX_EPOCH, |a| a.at)
}

/// The account page, saying that the link was not made; the cause goes to the log only.
fn not_linked(cause: &str, problem: &str) -> Response {
    tracing::warn!(cause, "linking a Slack account failed");
    Redirect::to(&format!("/account?chat={problem}")).into_response()
}
