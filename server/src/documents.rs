//! Documents to download: `GET /decision-table.xlsx[?blank=true]`, the decision table for Excel in the reader's
//! language (signed-in users); a review's charts `GET /reviews/chart.svg?chart=rates|counts|latency&…` and its
//! CSV export `GET /reviews.csv?…` (the review page's department, period and day); a drill's report as CSV
//! `GET /drills/{id}/report.csv`.
use crate::csv_file::{self, CsvOptions};
use crate::http::policy::route;
use axum::Router;
use axum::extract::{Path, Query, State};
use axum::http::Method;
use axum::http::{HeaderMap, header};
use axum::response::{IntoResponse, Response};
use backend::AppState;
use backend::auth::AuthSession;
use backend::charts::{self, Chart};
use backend::services;
use contract::AppError;
use contract::reviews::ReviewQuery;
use domain::invalid::{Field, Invalid, Rule};
use serde::Deserialize;

pub fn routes(state: AppState) -> Router {
    let router = route(Router::new(), Method::GET, "/decision-table.xlsx", decision_table);
    let router = route(router, Method::GET, "/reviews/chart.svg", review_chart);
    let router = route(router, Method::GET, "/drills/{id}/report.csv", drill_report_csv);
    route(router, Method::GET, "/reviews.csv", review_csv).with_state(state)
}

#[derive(Deserialize)]
struct ChartQuery {
    chart: String,
    #[serde(flatten)]
    review: ReviewQuery,
}

async fn review_chart(
    State(state): State<AppState>,
    auth: AuthSession,
    headers: HeaderMap,
    Query(query): Query<ChartQuery>,
) -> Response {
    let drawn = async {
        let caller = crate::audit_export::caller(auth, &headers)?;
        let chart = Chart::parse(&query.chart)
            .ok_or_else(|| AppError::invalid(Field::Chart, Invalid::new(Rule::Unknown, "rates, counts or latency")))?;
        let review = services::reviews::resolve(&state, &caller, &query.review)?;
        let trend = services::reviews::trend(&state, review.scope.as_deref(), review.period).await?;
        charts::draw(chart, &trend, app::api::locale_of(&headers)).map_err(|e| contract::AppError::internal("chart", e))
    };
    match drawn.await {
        // Private data: not kept by shared caches; the page asks again for each review.
        Ok(svg) => (
            [(header::CONTENT_TYPE, "image/svg+xml; charset=utf-8"), (header::CACHE_CONTROL, "private, no-store")],
            svg,
        )
            .into_response(),
        Err(error) => crate::api::problem::Problem(error).into_response(),
    }
}

async fn review_csv(
    State(state): State<AppState>,
    auth: AuthSession,
    headers: HeaderMap,
    Query(query): Query<ReviewQuery>,
    Query(options): Query<CsvOptions>,
) -> Response {
    let exported = async {
        let caller = crate::audit_export::caller(auth, &headers)?;
        services::reviews::export_csv(&state, &caller, &query, options.headings(caller.locale)).await
    };
    match exported.await {
        Ok(bytes) => csv_file::download(options, "rerun-gate-review.csv", bytes),
        Err(error) => crate::api::problem::Problem(error).into_response(),
    }
}

async fn drill_report_csv(
    State(state): State<AppState>,
    auth: AuthSession,
    headers: HeaderMap,
    Path(id): Path<String>,
    Query(options): Query<CsvOptions>,
) -> Response {
    let exported = async {
        let caller = crate::audit_export::caller(auth, &headers)?;
        services::drills::report_csv(&state, &caller, &id, options.headings(caller.locale)).await
    };
    match exported.await {
        Ok(bytes) => csv_file::download(options, "rerun-gate-drill-report.csv", bytes),
        Err(error) => crate::api::problem::Problem(error).into_response(),
    }
}

#[derive(Deserialize)]
struct DecisionTableQuery {
    #[serde(default)]
    blank: bool,
}

async fn decision_table(auth: AuthSession, headers: HeaderMap, Query(query): Query<DecisionTableQuery>) -> Response {
    if auth.user.is_none() {
        return crate::api::problem::Problem(AppError::Unauthorized).into_response();
    }
    match backend::xlsx::decision_table(app::api::locale_of(&headers), query.blank) {
        Ok(bytes) => {
            let name = if query.blank { "decision-table-blank.xlsx" } else { "decision-table.xlsx" };
            let kind = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet";
            let disposition = format!("attachment; filename=\"{name}\"");
            ([(header::CONTENT_TYPE, kind.to_string()), (header::CONTENT_DISPOSITION, disposition)], bytes)
                .into_response()
        }
        Err(error) => crate::api::problem::Problem(error).into_response(),
    }
}
