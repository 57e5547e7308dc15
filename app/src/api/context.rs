//! What a server function needs from the request: the state, the session, the caller, request ID and address.
use super::AppError;
use crate::backend::AppState;
use crate::backend::auth::AuthSession;
use crate::backend::services::Caller;
use axum::extract::ConnectInfo;
use axum::http::HeaderMap;
use leptos::prelude::use_context;
use std::net::SocketAddr;

pub fn state() -> Result<AppState, AppError> {
    use_context::<AppState>().ok_or_else(|| crate::backend::auth::internal("context", "AppState missing"))
}

pub async fn session() -> Result<AuthSession, AppError> {
    leptos_axum::extract::<AuthSession>().await.map_err(|e| crate::backend::auth::internal("auth session", e))
}

pub async fn request_id() -> Option<String> {
    let headers = leptos_axum::extract::<HeaderMap>().await.ok()?;
    headers.get("x-request-id")?.to_str().ok().map(str::to_string)
}

/// The client's address: the connection's, or the one a trusted reverse proxy forwarded.
pub async fn client_ip() -> String {
    let Ok(ConnectInfo(peer)) = leptos_axum::extract::<ConnectInfo<SocketAddr>>().await else { return "unknown".into() };
    let headers = leptos_axum::extract::<HeaderMap>().await.unwrap_or_default();
    let forwarded = headers.get("x-forwarded-for").and_then(|v| v.to_str().ok());
    let trusted = state().map(|s| s.settings.trusted_proxies.clone()).unwrap_or_default();
    crate::domain::forwarding::client_address(peer.ip(), forwarded, &trusted).to_string()
}

/// The signed-in caller, or 401.
pub async fn caller() -> Result<(AppState, Caller), AppError> {
    let state = state()?;
    let user = session().await?.user.ok_or(AppError::Unauthorized)?;
    Ok((state, Caller { user, request_id: request_id().await }))
}

/// Sets the cookies the pages are rendered by: the language (read by the i18n provider, see `ui::App`) and,
/// when given, the time zone (`ui::labels::ReaderZone`).
pub fn remember_preferences(language: &str, time_zone: Option<&str>) {
    use crate::domain::preferences::{LANGUAGE_COOKIE, TIME_ZONE_COOKIE};
    let Some(response) = use_context::<leptos_axum::ResponseOptions>() else { return };
    let cookies = std::iter::once((LANGUAGE_COOKIE, language)).chain(time_zone.map(|zone| (TIME_ZONE_COOKIE, zone)));
    for (name, value) in cookies {
        // Readable by the page's script too (it renders with them while hydrating); about 400 days.
        let cookie = format!("{name}={value}; Path=/; Max-Age=34560000; SameSite=Lax");
        if let Ok(value) = axum::http::HeaderValue::from_str(&cookie) {
            response.append_header(axum::http::header::SET_COOKIE, value);
        }
    }
}
