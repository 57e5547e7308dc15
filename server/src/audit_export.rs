//! `GET /audit/export?format=csv|jsonl&from=…&to=…&department=…&actor=…&action=…&process_id=…`: the trail
//! streamed to an auditor's browser as a download (constant memory); the export is itself audited.
use app::api::AppError;
use app::backend::AppState;
use app::backend::auth::AuthSession;
use app::backend::services::{Caller, audit_trail};
use app::domain::audit_export::{AuditFilterForm, ExportFormat};
use axum::Router;
use axum::body::Body;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, header};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use serde::Deserialize;

pub fn routes(state: AppState) -> Router {
    Router::new().route("/audit/export", axum::routing::get(export)).with_state(state)
}

#[derive(Deserialize)]
struct ExportQuery {
    format: String,
    #[serde(flatten)]
    filter: AuditFilterForm,
}

async fn export(State(state): State<AppState>, auth: AuthSession, headers: HeaderMap, Query(query): Query<ExportQuery>) -> Response {
    let Some(user) = auth.user else { return problem(AppError::Unauthorized) };
    let request_id = headers.get("x-request-id").and_then(|v| v.to_str().ok()).map(str::to_string);
    let caller = Caller { user, request_id };
    let format: ExportFormat = match query.format.parse() {
        Ok(format) => format,
        Err(message) => return problem(AppError::invalid("format", message)),
    };
    let filter = match query.filter.parse() {
        Ok(filter) => filter,
        Err(message) => return problem(AppError::invalid("filter", message)),
    };
    let export = match audit_trail::begin_for(&state, &caller, filter, format).await {
        Ok(export) => export,
        Err(error) => return problem(error),
    };
    let (kind, extension) = match format {
        ExportFormat::Csv => ("text/csv; charset=utf-8", "csv"),
        ExportFormat::Jsonl => ("application/x-ndjson", "jsonl"),
    };
    let name = format!("audit-{}-{}.{extension}", export.at.format("%Y%m%dT%H%M%SZ"), export.head_seq);
    let body = Body::from_stream(audit_trail::stream(state, export).map(|page| {
        page.map_err(|error| {
            tracing::error!(%error, "audit export stopped part-way");
            std::io::Error::other("export stopped")
        })
    }));
    let disposition = format!("attachment; filename=\"{name}\"");
    ([(header::CONTENT_TYPE, kind.to_string()), (header::CONTENT_DISPOSITION, disposition)], body).into_response()
}

fn problem(error: AppError) -> Response {
    crate::api::problem::Problem(error).into_response()
}
