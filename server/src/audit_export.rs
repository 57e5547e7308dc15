//! Downloads for auditors, each itself audited:
//! `GET /audit/export?format=csv|jsonl&from=…&to=…&department=…&actor=…&action=…&process_id=…` streams the trail
//! (constant memory); `GET /operations/{process_id}/evidence.zip` is one operation's evidence bundle. And the
//! Merkle tree's proofs, as JSON: `GET /api/v1/audit/proof?seq=N[&tree_size=M]` (one event is in the trail a
//! tree head vouches for) and `GET /api/v1/audit/consistency?from=A&to=B` (a later head extends an earlier one).
use crate::csv_file::CsvOptions;
use crate::http::policy::route;
use axum::Router;
use axum::body::Body;
use axum::extract::{Path, Query, State};
use axum::http::Method;
use axum::http::{HeaderMap, header};
use axum::response::{IntoResponse, Response};
use backend::AppState;
use backend::auth::AuthSession;
use backend::services::{Caller, audit_trail, audit_tree};
use contract::AppError;
use domain::audit_export::{AuditFilterForm, ExportFormat};
use domain::invalid::Field;
use futures::StreamExt;
use serde::Deserialize;

pub fn routes(state: AppState) -> Router {
    let router = route(Router::new(), Method::GET, "/audit/export", export);
    let router = route(router, Method::GET, "/operations/{process_id}/evidence.zip", evidence);
    let router = route(router, Method::GET, "/api/v1/audit/proof", event_proof);
    route(router, Method::GET, "/api/v1/audit/consistency", consistency_proof).with_state(state)
}

#[derive(Deserialize)]
struct ProofQuery {
    seq: i64,
    tree_size: Option<u64>,
}

async fn event_proof(
    State(state): State<AppState>,
    auth: AuthSession,
    headers: HeaderMap,
    Query(query): Query<ProofQuery>,
) -> Response {
    let proof = match caller(auth, &headers) {
        Ok(caller) => audit_tree::prove_event(&state, &caller, query.seq, query.tree_size).await,
        Err(error) => Err(error),
    };
    json_or_problem(proof)
}

#[derive(Deserialize)]
struct ConsistencyQuery {
    from: u64,
    to: u64,
}

async fn consistency_proof(
    State(state): State<AppState>,
    auth: AuthSession,
    headers: HeaderMap,
    Query(query): Query<ConsistencyQuery>,
) -> Response {
    let proof = match caller(auth, &headers) {
        Ok(caller) => audit_tree::prove_consistency(&state.db, &caller, query.from, query.to).await,
        Err(error) => Err(error),
    };
    json_or_problem(proof)
}

fn json_or_problem(answer: Result<impl serde::Serialize, AppError>) -> Response {
    match answer {
        Ok(answer) => axum::Json(answer).into_response(),
        Err(error) => problem(error),
    }
}

#[derive(Deserialize)]
struct ExportQuery {
    format: String,
    #[serde(flatten)]
    filter: AuditFilterForm,
}

pub(crate) fn caller(auth: AuthSession, headers: &HeaderMap) -> Result<Caller, AppError> {
    let user = auth.user.ok_or(AppError::Unauthorized)?;
    let request_id = headers.get("x-request-id").and_then(|v| v.to_str().ok()).map(str::to_string);
    Ok(Caller { session: user, request_id, locale: app::api::locale_of(headers), authentication: None })
}

async fn evidence(
    State(state): State<AppState>,
    auth: AuthSession,
    headers: HeaderMap,
    Path(process_id): Path<String>,
) -> Response {
    let bundle = match caller(auth, &headers) {
        Ok(caller) => backend::services::evidence::bundle(&state, &caller, &process_id).await,
        Err(error) => Err(error),
    };
    match bundle {
        Ok(bundle) => {
            let disposition = format!("attachment; filename=\"{}\"", bundle.file_name);
            (
                [(header::CONTENT_TYPE, "application/zip".to_string()), (header::CONTENT_DISPOSITION, disposition)],
                bundle.bytes,
            )
                .into_response()
        }
        Err(error) => problem(error),
    }
}

async fn export(
    State(state): State<AppState>,
    auth: AuthSession,
    headers: HeaderMap,
    Query(query): Query<ExportQuery>,
    Query(csv): Query<CsvOptions>,
) -> Response {
    let caller = match caller(auth, &headers) {
        Ok(caller) => caller,
        Err(error) => return problem(error),
    };
    let format: ExportFormat = match query.format.parse() {
        Ok(format) => format,
        Err(message) => return problem(AppError::invalid(Field::Format, message)),
    };
    let filter = match query.filter.parse() {
        Ok(filter) => filter,
        Err((field, why)) => return problem(AppError::invalid(field, why)),
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
    let start = if format == ExportFormat::Csv { csv.start() } else { b"" };
    let pages = futures::stream::once(async move { Ok(start.to_vec()) }).chain(audit_trail::stream(
        state,
        export,
        csv.headings(caller.locale),
    ));
    let body = Body::from_stream(pages.map(|page| {
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
