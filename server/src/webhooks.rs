//! `POST /hooks/{connector}`: inbound webhooks from outside systems (Standard Webhooks). The raw body is
//! verified before anything parses it; a replay answers 2xx and changes nothing.
use crate::api::problem::Problem;
use crate::http::policy::route;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::http::Method;
use axum::{Json, Router};
use backend::AppState;
use backend::services::webhooks::{Received, receive};
use domain::webhooks::Headers;
use serde_json::{Value, json};

pub fn routes(state: AppState) -> Router {
    route(Router::new(), Method::POST, "/hooks/{connector}", hook).with_state(state)
}

async fn hook(
    State(state): State<AppState>,
    Path(connector): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Json<Value>, Problem> {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let signed = Headers {
        id: header("webhook-id"),
        timestamp: header("webhook-timestamp"),
        signature: header("webhook-signature"),
    };
    let outcome = match receive(&state, &connector, &signed, &body).await? {
        Received::Accepted => "accepted",
        Received::Duplicate => "duplicate",
    };
    Ok(Json(json!({"status": outcome})))
}
