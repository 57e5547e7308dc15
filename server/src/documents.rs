//! Documents to download: `GET /decision-table.xlsx[?blank=true]`, the decision table for Excel in the reader's
//! language (signed-in users).
use app::api::AppError;
use app::backend::AppState;
use app::backend::auth::AuthSession;
use app::domain::preferences::{LANGUAGE_COOKIE, cookie_value};
use app::i18n::Locale;
use axum::Router;
use axum::extract::Query;
use axum::http::{HeaderMap, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;

pub fn routes(state: AppState) -> Router {
    Router::new().route("/decision-table.xlsx", axum::routing::get(decision_table)).with_state(state)
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
    match app::backend::xlsx::decision_table(language(&headers), query.blank) {
        Ok(bytes) => {
            let name = if query.blank { "decision-table-blank.xlsx" } else { "decision-table.xlsx" };
            let kind = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet";
            let disposition = format!("attachment; filename=\"{name}\"");
            ([(header::CONTENT_TYPE, kind.to_string()), (header::CONTENT_DISPOSITION, disposition)], bytes).into_response()
        }
        Err(error) => crate::api::problem::Problem(error).into_response(),
    }
}

/// The pages' language cookie, else Japanese.
fn language(headers: &HeaderMap) -> Locale {
    let cookies = headers.get_all(header::COOKIE).iter().filter_map(|v| v.to_str().ok());
    cookies.filter_map(|c| cookie_value(c, LANGUAGE_COOKIE)).find_map(|value| value.parse().ok()).unwrap_or_default()
}
