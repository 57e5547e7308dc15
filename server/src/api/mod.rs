//! The JSON ingestion API for integrations (SPEC "Ingestion API"), documented by the OpenAPI document it
//! serves at `/api/openapi.json`.
pub mod client;
pub mod problem;
mod webhooks_doc;
use webhooks_doc::RerunWebhook;

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::{Json, Router};
use backend::AppState;
use backend::services::{operations, registration, step_events};
use client::Client;
use contract::operations::{OperationView, RegisterOperation, Registered, StepEvent, StepEventAnswer};
use contract::rerun_call::{RerunAnswer, RerunCall};
use domain::invalid::{Field, Invalid, Rule};
use problem::{PROBLEM_JSON, Problem, ProblemBody};
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};
use utoipa_axum::{router::OpenApiRouter, routes};

#[derive(OpenApi)]
#[openapi(
    info(
        title = "Rerun Gate ingestion API",
        version = "1",
        description = "Operations, steps and their events, for integrations."
    ),
    modifiers(&BearerToken, &RerunWebhook),
    components(schemas(ProblemBody, RerunCall, RerunAnswer)),
    security(("bearer" = []))
)]
struct ApiDoc;

struct BearerToken;

impl Modify for BearerToken {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build()),
        );
    }
}

pub fn routes(state: AppState) -> Router {
    let (router, document) = api_router().split_for_parts();
    // The JSON API's routes are the document's: noted for the policy from it.
    for (path, item) in &document.paths.paths {
        for method in item_methods(item) {
            crate::http::policy::note(method, path);
        }
    }
    let describe = move || std::future::ready(Json(document.clone()));
    crate::http::policy::route(router, axum::http::Method::GET, "/api/openapi.json", describe).with_state(state)
}

fn api_router() -> OpenApiRouter<AppState> {
    OpenApiRouter::with_openapi(ApiDoc::openapi())
        .routes(routes!(register_operation))
        .routes(routes!(get_operation))
        .routes(routes!(report_step_event))
}

/// The OpenAPI document as `/api/openapi.json` serves it (for `server openapi` and the client kits' tests).
pub fn document() -> utoipa::openapi::OpenApi {
    api_router().split_for_parts().1
}

/// The methods a path of the OpenAPI document has operations for.
fn item_methods(item: &utoipa::openapi::PathItem) -> impl Iterator<Item = &'static str> {
    let methods = [
        ("GET", &item.get),
        ("POST", &item.post),
        ("PUT", &item.put),
        ("PATCH", &item.patch),
        ("DELETE", &item.delete),
    ];
    methods.into_iter().filter(|(_, operation)| operation.is_some()).map(|(method, _)| method)
}

fn json_answer(status: u16, body: String, replayed: bool) -> Response {
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::OK);
    let mut response = (status, body).into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    if replayed {
        headers.insert("idempotency-replayed", HeaderValue::from_static("true"));
    }
    response
}

/// Not JSON at all → 400; JSON of the wrong shape → 422 naming what is wrong.
fn parse_json<T: serde::de::DeserializeOwned>(body: &Bytes) -> Result<T, Problem> {
    serde_json::from_slice(body).map_err(|e| {
        Problem(match e.classify() {
            serde_json::error::Category::Data => {
                contract::AppError::invalid(Field::Body, Invalid::new(Rule::Malformed, e.to_string()))
            }
            _ => contract::AppError::BadRequest(format!("the body is not JSON: {e}")),
        })
    })
}

/// Register an operation. The `Idempotency-Key` header is required: the same key with the same body answers
/// the stored response again (`Idempotency-Replayed: true`); with another body, 409.
#[utoipa::path(
    post, path = "/api/v1/operations", tag = "operations",
    params(
        ("Idempotency-Key" = String, Header, description = "One key per intended registration; reuse it on retries",
            min_length = 1, max_length = 255, pattern = "^[!-~]+$", example = "ORD-2026-0001:register"),
    ),
    request_body(content = RegisterOperation, example = json!({
        "process_id": "ORD-2026-0001", "workflow": "order-intake", "department": "sales", "business_key": "ORDER-4000",
        "content": {"order_id": "ORDER-4000", "amount": 4000, "currency": "JPY"},
        "steps": [
            {"name": "register_order", "idempotency_key": "ORD-2026-0001:register_order"},
            {"name": "ai_summary", "idempotency_key": "ORD-2026-0001:ai_summary"}
        ]
    })),
    responses(
        (status = 201, description = "Registered (or the stored answer, replayed)", body = Registered,
            headers(("Idempotency-Replayed" = bool,
                description = "`true` when this is the stored answer to an earlier call with the same key and body"))),
        (status = 400, description = "No Idempotency-Key, or not JSON",
            body = ProblemBody, content_type = PROBLEM_JSON),
        (status = 401, description = "token-missing, or invalid-token (unknown, mistyped or revoked)",
            body = ProblemBody, content_type = PROBLEM_JSON),
        (status = 429, description = "This client is over its rate; try again after `Retry-After` seconds",
            body = ProblemBody, content_type = PROBLEM_JSON),
        (status = 503, description = "busy: the server is saturated; try again after `Retry-After` seconds",
            body = ProblemBody, content_type = PROBLEM_JSON),
        (status = 404, description = "Department outside the token's scope",
            body = ProblemBody, content_type = PROBLEM_JSON),
        (status = 409, description = "idempotency-key-mismatch, idempotency-key-in-flight or process-id-exists",
            body = ProblemBody, content_type = PROBLEM_JSON),
        (status = 413, description = "The body is larger than 64 KiB", body = String, content_type = "text/plain"),
        (status = 422, description = "Invalid content", body = ProblemBody, content_type = PROBLEM_JSON),
    )
)]
async fn register_operation(
    State(state): State<AppState>,
    Client(client): Client,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, Problem> {
    let key = headers
        .get("idempotency-key")
        .and_then(|v| v.to_str().ok())
        .ok_or_else(|| Problem(contract::AppError::BadRequest("the Idempotency-Key header is required".into())))?;
    let body: serde_json::Value = parse_json(&body)?;
    let answer = registration::register(&state, &client, key, &body).await?;
    Ok(json_answer(answer.status, answer.body, answer.replayed))
}

/// One operation: its steps with state, completion flag and latest verdict, and its status.
#[utoipa::path(
    get, path = "/api/v1/operations/{process_id}", tag = "operations",
    params(("process_id" = String, Path, min_length = 1, max_length = 128, example = "ORD-2026-0001")),
    responses(
        (status = 200, body = OperationView),
        (status = 401, body = ProblemBody, content_type = PROBLEM_JSON),
        (status = 429, description = "This client is over its rate; try again after `Retry-After` seconds",
            body = ProblemBody, content_type = PROBLEM_JSON),
        (status = 503, description = "busy: the server is saturated; try again after `Retry-After` seconds",
            body = ProblemBody, content_type = PROBLEM_JSON),
        (status = 404, body = ProblemBody, content_type = PROBLEM_JSON),
    )
)]
async fn get_operation(
    State(state): State<AppState>,
    Client(client): Client,
    Path(process_id): Path<String>,
) -> Result<Json<OperationView>, Problem> {
    Ok(Json(operations::get_for_client(&state, &client, &process_id).await?))
}

/// Report what happened to one step. An event whose `seq` is not newer than the stored one is answered with
/// `applied: false` and changes nothing (never an error, so senders do not retry it).
#[utoipa::path(
    post, path = "/api/v1/operations/{process_id}/steps/{step}/events", tag = "operations",
    params(
        ("process_id" = String, Path, min_length = 1, max_length = 128, example = "ORD-2026-0001"),
        ("step" = String, Path, description = "A step name of the operation's workflow", example = "register_order"),
    ),
    request_body(content = StepEvent, example = json!({"seq": 1, "type": "succeeded", "result_id": "order-77"})),
    responses(
        (status = 200, body = StepEventAnswer),
        (status = 400, body = ProblemBody, content_type = PROBLEM_JSON),
        (status = 401, body = ProblemBody, content_type = PROBLEM_JSON),
        (status = 429, description = "This client is over its rate; try again after `Retry-After` seconds",
            body = ProblemBody, content_type = PROBLEM_JSON),
        (status = 503, description = "busy: the server is saturated; try again after `Retry-After` seconds",
            body = ProblemBody, content_type = PROBLEM_JSON),
        (status = 404, body = ProblemBody, content_type = PROBLEM_JSON),
        (status = 413, description = "The body is larger than 64 KiB", body = String, content_type = "text/plain"),
        (status = 422, body = ProblemBody, content_type = PROBLEM_JSON),
    )
)]
async fn report_step_event(
    State(state): State<AppState>,
    Client(client): Client,
    Path((process_id, step)): Path<(String, String)>,
    body: Bytes,
) -> Result<Json<StepEventAnswer>, Problem> {
    let event: StepEvent = parse_json(&body)?;
    Ok(Json(step_events::report(&state, &client, &process_id, &step, event).await?))
}
