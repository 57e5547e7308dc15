//! The HTTP side of the demo outside systems (`serve --demo` only): what an integration calls to register an
//! order, start an AI summary, send a mail or issue an invoice, and what a person can look at.
//!
//! `POST /demo/{service}/requests` (header `Idempotency-Key`, optional `Process-Id`, JSON body) does the work
//! once per key; `Demo-Fault: drop-answer` does the work and then cuts the connection, as a lost answer.
//! `GET /demo/{service}/requests?idempotency_key=…` and `GET /demo/{service}/requests/{id}` read the log.
use crate::api::problem::Problem;
use crate::http::policy::route;
use axum::body::{Body, Bytes};
use axum::extract::{Path, Query, State};
use axum::http::Method;
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::{Json, Router};
use backend::AppState;
use backend::demo::systems::{DemoSystems, Service};
use contract::AppError;
use contract::rerun_call::{RerunAnswer, RerunOutcome};
use serde::Deserialize;
use serde_json::Value;

pub fn routes(state: AppState) -> Router {
    let router = route(Router::new(), Method::GET, "/demo/{service}/requests", find_by_key);
    let router = route(router, Method::POST, "/demo/{service}/requests", execute);
    let router = route(router, Method::GET, "/demo/{service}/requests/{id}", find_by_id);
    route(router, Method::POST, "/demo/rerun", rerun).with_state(state)
}

/// The demo systems, read and written through the app's database.
fn outside(state: &AppState) -> DemoSystems {
    DemoSystems::new(state.db.clone(), state.clock.clone())
}

fn service(name: &str) -> Result<Service, Problem> {
    Service::parse(name).ok_or(Problem(AppError::NotFound))
}

async fn execute(
    State(state): State<AppState>,
    Path(name): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, Problem> {
    let service = service(&name)?;
    let header = |n: &str| headers.get(n).and_then(|v| v.to_str().ok()).map(str::to_string);
    let key = header("idempotency-key").ok_or_else(|| AppError::BadRequest("Idempotency-Key is required".into()))?;
    let content: Value =
        serde_json::from_slice(&body).map_err(|e| AppError::BadRequest(format!("the body is not JSON: {e}")))?;
    let done = outside(&state).execute(service, &key, &content, header("process-id").as_deref()).await?;
    if header("demo-fault").as_deref() == Some("drop-answer") {
        // The work is done; the answer never arrives (the connection breaks mid-body).
        let broken = futures::stream::once(async { Err::<Bytes, _>(std::io::Error::other("answer lost")) });
        return Ok(Body::from_stream(broken).into_response());
    }
    let status = if done.replayed { StatusCode::OK } else { StatusCode::CREATED };
    let mut response = (status, Json(done.execution)).into_response();
    if done.replayed {
        response.headers_mut().insert("idempotency-replayed", HeaderValue::from_static("true"));
    }
    Ok(response)
}

#[derive(Deserialize)]
struct ByKey {
    idempotency_key: String,
}

async fn find_by_key(
    State(state): State<AppState>,
    Path(name): Path<String>,
    Query(query): Query<ByKey>,
) -> Result<Response, Problem> {
    let found = outside(&state).find_by_key(service(&name)?, &query.idempotency_key, None).await?;
    Ok(Json(found.ok_or(AppError::NotFound)?).into_response())
}

async fn find_by_id(
    State(state): State<AppState>,
    Path((name, id)): Path<(String, String)>,
) -> Result<Response, Problem> {
    let found = outside(&state).find_by_id(service(&name)?, &id, None).await?;
    Ok(Json(found.ok_or(AppError::NotFound)?).into_response())
}

/// The demo integration's rerun endpoint: signed like every dispatch; a repeat of a webhook-id does nothing.
async fn rerun(State(state): State<AppState>, headers: HeaderMap, body: Bytes) -> Result<Response, Problem> {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let signed = domain::webhooks::Headers {
        id: header("webhook-id"),
        timestamp: header("webhook-timestamp"),
        signature: header("webhook-signature"),
    };
    let outcome = backend::demo::receiver::receive(&state, &signed, &body).await?;
    let status = if outcome == RerunOutcome::Done { StatusCode::ACCEPTED } else { StatusCode::OK };
    Ok((status, Json(RerunAnswer { outcome, detail: None })).into_response())
}
