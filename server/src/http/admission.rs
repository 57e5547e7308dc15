//! Load shedding: every request of a kind that reads the database takes a turn of its kind (`AppState::admission`:
//! pages, the calls of open pages, API, exports) before anything else runs, the session's look-up included, and
//! holds it until its body is sent. When the turns and their short queue are taken, the answer is 503 with
//! `Retry-After` at once, in the form its caller understands, instead of a wait for a connection that ends in the
//! pool's timeout.
use crate::api::problem::Problem;
use app::api::policy;
use axum::body::{Body, Bytes};
use axum::extract::{MatchedPath, Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{Html, IntoResponse, Response};
use backend::AppState;
use backend::turns::{Turn, Turns};
use contract::AppError;
use domain::access::Kind;
use std::pin::Pin;
use std::task::{Context, Poll};

/// How long a shed caller is asked to wait: a page reloads itself after this; an export waits longer. Each answer
/// adds up to `JITTER_SECONDS` at random, so that the crowd a burst sheds does not come back all at once.
const RETRY_SECONDS: u64 = 2;
const EXPORT_RETRY_SECONDS: u64 = 15;
const JITTER_SECONDS: u64 = 3;

/// Middleware (the outermost route layer): a turn, or 503.
pub async fn admit(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let kind = request
        .extensions()
        .get::<MatchedPath>()
        .and_then(|pattern| policy::entry(request.method().as_str(), pattern.as_str()))
        .map(|entry| entry.kind);
    let Some((kind, turns)) = kind.and_then(|kind| Some((kind, turns_of(&state, kind)?))) else {
        return next.run(request).await;
    };
    match turns.turn().await {
        Ok(turn) => next.run(request).await.map(|body| Body::new(Held { body, _turn: turn })),
        Err(_) => {
            tracing::warn!(route = %request.uri().path(), ?kind, "busy: request shed");
            shed(kind, request.uri().path())
        }
    }
}

/// The turns a kind of route takes; health checks, metrics and the demo's outside systems take none.
fn turns_of(state: &AppState, kind: Kind) -> Option<&Turns> {
    let admission = &state.admission;
    match kind {
        Kind::Page | Kind::Document | Kind::SignInStep | Kind::Download => Some(&admission.pages),
        Kind::ServerFn => Some(&admission.calls),
        Kind::Export => Some(&admission.exports),
        Kind::Api | Kind::Webhook => Some(&admission.api),
        Kind::Probe | Kind::Demo => None,
    }
}

/// The 503 its caller understands: a page that tries again by itself, a server function's error, a problem.
fn shed(kind: Kind, path: &str) -> Response {
    use rand::Rng;
    let jitter = rand::thread_rng().gen_range(0..=JITTER_SECONDS);
    let (retry, export_retry) = (RETRY_SECONDS + jitter, EXPORT_RETRY_SECONDS + jitter);
    let (seconds, mut response) = match kind {
        Kind::Page | Kind::Document | Kind::SignInStep | Kind::Download => (retry, busy_page(retry, BUSY_PAGE)),
        Kind::Export => (export_retry, busy_page(export_retry, BUSY_EXPORT)),
        Kind::ServerFn => (retry, super::policy::server_fn_error(path, &busy(retry))),
        _ => (retry, Problem(busy(retry)).into_response()),
    };
    response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(seconds));
    response
}

fn busy(retry_after_secs: u64) -> AppError {
    AppError::Busy { retry_after_secs }
}

const BUSY_PAGE: [&str; 2] = [
    "ただいま混み合っています。数秒後に自動で読み込み直します。",
    "The server is busy. This page loads again by itself in a few seconds.",
];
const BUSY_EXPORT: [&str; 2] = [
    "ほかのダウンロードを作成中です。順番が来ると自動で始まります。",
    "Other downloads are being made. Yours starts by itself when its turn comes.",
];

/// A short page in both languages (the reader's language is in a cookie this answer does not read) that loads
/// the same address again after `seconds`.
fn busy_page(seconds: u64, [ja, en]: [&str; 2]) -> Response {
    let html = format!(
        "<!DOCTYPE html><html lang=\"ja\"><head><meta charset=\"utf-8\">\
         <meta http-equiv=\"refresh\" content=\"{seconds}\"><title>Rerun Gate</title></head>\
         <body><p>{ja}</p><p lang=\"en\">{en}</p></body></html>"
    );
    (StatusCode::SERVICE_UNAVAILABLE, Html(html)).into_response()
}

/// A response body that holds its turn until it is sent (or its client goes): a streamed page's resources
/// still read the database after its handler returned.
struct Held {
    body: Body,
    _turn: Turn,
}

impl http_body::Body for Held {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.get_mut().body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.body.size_hint()
    }
}
