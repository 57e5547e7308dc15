//! Liveness and readiness for load balancers.
use app::backend::AppState;
use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::get;

pub fn routes(state: AppState) -> Router {
    Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .route("/readyz", get(ready))
        .with_state(state)
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
