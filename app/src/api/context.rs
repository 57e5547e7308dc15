//! What a server function needs from the request: the state, the session, the caller, request ID and address.
use crate::backend::AppState;
use crate::backend::auth::AuthSession;
use crate::backend::services::Caller;
use crate::contract::AppError;
use crate::i18n::Locale;
use axum::extract::ConnectInfo;
use axum::http::HeaderMap;
use leptos::prelude::use_context;
use std::any::Any;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};
use tokio::sync::OnceCell;

pub fn state() -> Result<AppState, AppError> {
    use_context::<AppState>().ok_or_else(|| AppError::internal("context", "AppState missing"))
}

pub async fn session() -> Result<AuthSession, AppError> {
    leptos_axum::extract::<AuthSession>().await.map_err(|e| AppError::internal("auth session", e))
}

pub async fn request_id() -> Option<String> {
    let headers = leptos_axum::extract::<HeaderMap>().await.ok()?;
    headers.get("x-request-id")?.to_str().ok().map(str::to_string)
}

/// The client's address: the connection's, or the one a trusted reverse proxy forwarded.
pub async fn client_ip() -> String {
    let Ok(ConnectInfo(peer)) = leptos_axum::extract::<ConnectInfo<SocketAddr>>().await else {
        return "unknown".into();
    };
    let headers = leptos_axum::extract::<HeaderMap>().await.unwrap_or_default();
    let forwarded = headers.get("x-forwarded-for").and_then(|v| v.to_str().ok());
    let trusted = state().map(|s| s.server.trusted_proxies.clone()).unwrap_or_default();
    crate::domain::forwarding::client_address(peer.ip(), forwarded, &trusted).to_string()
}

/// The language of the request's reader: the pages' language cookie (as the page's own i18n provider reads
/// it), else Japanese.
pub async fn reader_locale() -> Locale {
    leptos_axum::extract::<HeaderMap>().await.map(|headers| locale_of(&headers)).unwrap_or_default()
}

/// The reader's language from a request's headers (the pages' language cookie); also for the downloads.
pub fn locale_of(headers: &HeaderMap) -> Locale {
    crate::words::locale_of_cookies(headers.get_all(axum::http::header::COOKIE).iter().filter_map(|v| v.to_str().ok()))
}

/// The signed-in caller, or 401.
pub async fn caller() -> Result<(AppState, Caller), AppError> {
    let state = state()?;
    let session = session().await?;
    let user = session.user.clone().ok_or(AppError::Unauthorized)?;
    let authentication = crate::backend::auth::authentication(&session).await;
    Ok((state, Caller { session: user, request_id: request_id().await, locale: reader_locale().await, authentication }))
}

/// Sets the cookies the pages are rendered by: the language (read by the i18n provider, see `ui::App`) and,
/// when given, the time zone (`ui::labels::ReaderZone`).
pub fn remember_preferences(language: &str, time_zone: Option<&str>) {
    let Some(response) = use_context::<leptos_axum::ResponseOptions>() else { return };
    for cookie in preference_cookies(language, time_zone) {
        response.append_header(axum::http::header::SET_COOKIE, cookie);
    }
}

/// A cookie the request carries.
pub async fn cookie(name: &str) -> Option<String> {
    let headers = leptos_axum::extract::<HeaderMap>().await.ok()?;
    let pairs = headers.get_all(axum::http::header::COOKIE).into_iter().filter_map(|v| v.to_str().ok());
    let mut pairs = pairs.flat_map(|v| v.split(';').map(str::trim).collect::<Vec<_>>());
    pairs.find_map(|pair| pair.strip_prefix(name)?.strip_prefix('=').map(str::to_string))
}

/// Marks this browser as one its account's owner signed in from (`domain::throttle::DEVICE_COOKIE`): only the
/// server reads it; over HTTPS only, except on a local address.
pub fn remember_device(token: &str, secure: bool) {
    use crate::domain::throttle::{DEVICE_COOKIE, DEVICE_DAYS};
    let Some(response) = use_context::<leptos_axum::ResponseOptions>() else { return };
    let secure = if secure { "; Secure" } else { "" };
    let max_age = DEVICE_DAYS * 24 * 60 * 60;
    let cookie = format!("{DEVICE_COOKIE}={token}; Path=/; Max-Age={max_age}; HttpOnly; SameSite=Lax{secure}");
    if let Ok(value) = axum::http::HeaderValue::from_str(&cookie) {
        response.append_header(axum::http::header::SET_COOKIE, value);
    }
}

/// The `Set-Cookie` values of `remember_preferences` (also set by the company sign-in's return).
pub fn preference_cookies(language: &str, time_zone: Option<&str>) -> Vec<axum::http::HeaderValue> {
    use crate::domain::preferences::{LANGUAGE_COOKIE, TIME_ZONE_COOKIE};
    let cookies = std::iter::once((LANGUAGE_COOKIE, language)).chain(time_zone.map(|zone| (TIME_ZONE_COOKIE, zone)));
    // Readable by the page's script too (it renders with them while hydrating); about 400 days.
    cookies
        .filter_map(|(name, value)| {
            axum::http::HeaderValue::from_str(&format!("{name}={value}; Path=/; Max-Age=34560000; SameSite=Lax")).ok()
        })
        .collect()
}

/// What the pages read, kept for the rest of one server response. Leptos renders the signed-in layout's
/// `Suspense` content more than once on the server, and each render asks the page's server functions again:
/// three reads of the board per page load (measured). Read once, every render shows the same data, which is
/// also the data the page hydrates with. Provided per request (see `server::startup`).
#[derive(Clone, Default)]
pub struct ReadOnce(Arc<Mutex<HashMap<String, Arc<dyn Any + Send + Sync>>>>);

/// The answer of `read` for `key` (a server function's endpoint and arguments), read at most once per
/// response; read every time where no response keeps them (a call outside a request).
pub async fn read_once<K, T, F>(key: K, read: F) -> Result<T, AppError>
where
    K: std::fmt::Debug,
    T: Clone + Send + Sync + 'static,
    F: Future<Output = Result<T, AppError>>,
{
    let Some(ReadOnce(kept)) = use_context::<ReadOnce>() else { return read.await };
    let cell = {
        let mut kept = kept.lock().unwrap_or_else(PoisonError::into_inner);
        let cell = kept.entry(format!("{key:?}")).or_insert_with(|| Arc::new(OnceCell::<Result<T, AppError>>::new()));
        cell.clone().downcast::<OnceCell<Result<T, AppError>>>()
    };
    match cell {
        // Concurrent renders wait for the first read instead of starting their own.
        Ok(cell) => cell.get_or_init(|| read).await.clone(),
        Err(_) => read.await, // the same key for another type: cannot happen with endpoint names as keys
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use leptos::prelude::{Owner, provide_context};
    use leptos::reactive::computed::ScopedFuture;
    use std::sync::atomic::{AtomicUsize, Ordering};

    async fn board(reads: &AtomicUsize) -> Result<usize, AppError> {
        tokio::task::yield_now().await;
        Ok(reads.fetch_add(1, Ordering::SeqCst) + 1)
    }

    #[tokio::test]
    async fn a_response_reads_each_page_data_once_however_often_it_renders() {
        let reads = AtomicUsize::new(0);
        let owner = Owner::new();
        owner.with(|| provide_context(ReadOnce::default()));
        // As a page's resource reads: under the response's owner.
        let render = || owner.with(|| ScopedFuture::new(read_once(("board/stalled", "sales"), board(&reads))));
        let answers = futures::future::join3(render(), render(), render()).await;
        assert_eq!(answers, (Ok(1), Ok(1), Ok(1)), "three renders at once, one read");
        let other = owner.with(|| ScopedFuture::new(read_once(("board/stalled", "billing"), board(&reads))));
        assert_eq!(other.await, Ok(2), "other arguments are another read");
    }

    #[tokio::test]
    async fn without_a_response_every_call_reads() {
        let reads = AtomicUsize::new(0);
        assert_eq!(read_once("me", board(&reads)).await, Ok(1));
        assert_eq!(read_once("me", board(&reads)).await, Ok(2));
    }
}
