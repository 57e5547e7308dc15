//! Liveness and readiness for load balancers.
use crate::http::policy::route;
use app::backend::AppState;
use axum::Router;
use axum::extract::State;
use axum::http::Method;
use axum::http::StatusCode;

pub fn routes(state: AppState) -> Router {
    let router = route(Router::new(), Method::GET, "/healthz", || async { "ok" });
    route(router, Method::GET, "/readyz", ready).with_state(state)
}

/// Ready when the database answers.
async fn ready(State(state): State<AppState>) -> (StatusCode, &'static str) {
    match state.db.begin_read().await {
        Ok(_) => (StatusCode::OK, "ready"),
        Err(error) => {
            tracing::error!(%error, "database not reachable");
            (StatusCode::SERVICE_UNAVAILABLE, "database not reachable")
        }
    }
}
