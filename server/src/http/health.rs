//! Liveness and readiness for load balancers.
use crate::http::policy::route;
use axum::Router;
use axum::extract::State;
use axum::http::Method;
use axum::http::StatusCode;
use backend::AppState;

pub fn routes(state: AppState) -> Router {
    let router = route(Router::new(), Method::GET, "/healthz", || async { "ok" });
    route(router, Method::GET, "/readyz", ready).with_state(state)
}

/// Ready when the database answers. Reads go on when the audit signer's alarm stands (it stays ready), but the
/// answer says so, with the numbers, for whoever watches it.
async fn ready(State(state): State<AppState>) -> (StatusCode, String) {
    let answers = state.db.begin_read().await.map(drop);
    match answers {
        Ok(()) => match backend::services::audit_proof::signer(&state).alarm() {
            None => (StatusCode::OK, "ready".into()),
            Some(alarm) => (StatusCode::OK, format!("ready; audit trail broken: {alarm}")),
        },
        Err(error) => {
            tracing::error!(%error, "database not reachable");
            (StatusCode::SERVICE_UNAVAILABLE, "database not reachable".into())
        }
    }
}
