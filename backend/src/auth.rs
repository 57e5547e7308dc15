//! Sign-in sessions: axum-login on tower-sessions (session ID rotated at sign-in, sessions bound to the
//! password hash), plus idle and absolute timeouts measured with the state's clock.
use super::AppState;
use super::services::session_users::{self, SessionUser};
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;
use axum_login::{AuthUser, AuthnBackend, UserId};
use contract::AppError;
use domain::identity::Authentication;

pub type AuthSession = axum_login::AuthSession<Backend>;

const SIGNED_IN_AT: &str = "signed_in_at";
const LAST_SEEN_AT: &str = "last_seen_at";
/// When and how the person last proved who they are (a decision needs it recent: `Caller::fresh_sign_in`).
const AUTHENTICATED: &str = "authenticated";
/// The session's key for a chat link under way (at Slack), and for the person and sign-in that started it: both
/// dropped at every sign-in, so that a link started by one person is never finished for another.
pub const CHAT_LINK_PENDING: &str = "slack_link_pending";
pub const CHAT_LINK_STARTED_BY: &str = "slack_link_started_by";
/// Activity is noted at most once a minute: noting it changes the session, and a changed session is written
/// back to the store, which would make every page view a database write. An idle session therefore ends
/// between the idle timeout minus a minute and the idle timeout.
const ACTIVITY_RESOLUTION_SECONDS: i64 = 60;

impl AuthUser for SessionUser {
    type Id = i64;
    fn id(&self) -> i64 {
        self.user.id
    }
    fn session_auth_hash(&self) -> &[u8] {
        self.auth_hash()
    }
}

#[derive(Clone)]
pub struct Backend {
    state: AppState,
}

impl Backend {
    pub fn new(state: AppState) -> Self {
        Backend { state }
    }
}

#[derive(Debug, thiserror::Error)]
#[error("session user lookup failed: {0}")]
pub struct BackendError(#[from] sqlx::Error);

/// Sign-in itself (throttling, audit) happens in `services::sign_in`; this backend only reloads users.
impl AuthnBackend for Backend {
    type User = SessionUser;
    type Credentials = std::convert::Infallible;
    type Error = BackendError;

    async fn authenticate(&self, credentials: Self::Credentials) -> Result<Option<SessionUser>, BackendError> {
        match credentials {}
    }

    /// Loaded on every request: a disabled user or a revoked role takes effect at the next call.
    async fn get_user(&self, id: &UserId<Self>) -> Result<Option<SessionUser>, BackendError> {
        Ok(session_users::active(&self.state, *id).await?)
    }
}

/// Starts a signed-in session (new session ID) and notes when it started, and when and how the person
/// authenticated.
pub async fn start_session(
    auth: &mut AuthSession,
    user: &SessionUser,
    state: &AppState,
    authenticated: &Authentication,
) -> Result<(), AppError> {
    // Always a new session ID, even when this browser was signed in before (session fixation).
    auth.session.cycle_id().await.map_err(|e| AppError::internal("session cycle", e))?;
    for key in [CHAT_LINK_PENDING, CHAT_LINK_STARTED_BY] {
        auth.session.remove_value(key).await.map_err(|e| AppError::internal("session remove", e))?;
    }
    auth.login(user).await.map_err(|e| AppError::internal("session login", e))?;
    let now = state.clock.now().timestamp();
    for key in [SIGNED_IN_AT, LAST_SEEN_AT] {
        auth.session.insert(key, now).await.map_err(|e| AppError::internal("session insert", e))?;
    }
    auth.session.insert(AUTHENTICATED, authenticated).await.map_err(|e| AppError::internal("session insert", e))
}

/// When and how the session's person last authenticated (`None` for sessions from before it was noted).
pub async fn authentication(auth: &AuthSession) -> Option<Authentication> {
    auth.session.get(AUTHENTICATED).await.ok().flatten()
}

/// Middleware: ends sessions past the idle or absolute timeout, and notes activity on the others.
pub async fn enforce_timeouts(
    State(state): State<AppState>,
    mut auth: AuthSession,
    mut request: Request,
    next: Next,
) -> Response {
    if auth.user.is_some() {
        let now = state.clock.now().timestamp();
        let signed_in_at: Option<i64> = auth.session.get(SIGNED_IN_AT).await.ok().flatten();
        let last_seen_at: Option<i64> = auth.session.get(LAST_SEEN_AT).await.ok().flatten();
        let expired = match (signed_in_at, last_seen_at) {
            (Some(start), Some(seen)) => {
                now - start > state.server.absolute_timeout.as_secs() as i64
                    || now - seen > state.server.idle_timeout.as_secs() as i64
            }
            _ => true,
        };
        if expired {
            if let Err(e) = auth.logout().await {
                tracing::warn!(error = %e, "could not end an expired session");
            }
            // Handlers read the session from the request: hand them the signed-out one.
            request.extensions_mut().insert(auth);
        } else if last_seen_at.is_some_and(|seen| now - seen >= ACTIVITY_RESOLUTION_SECONDS)
            && let Err(e) = auth.session.insert(LAST_SEEN_AT, now).await
        {
            tracing::warn!(error = %e, "could not note session activity");
        }
    }
    next.run(request).await
}

/// Where a signed-out visitor of a page is sent: the sign-in page, which brings them back to the page they asked
/// for. (Rendering the sign-in form in place of the page would put every page's data loading inside the wait for
/// the signed-in user, and Leptos then loads it twice: a page could hydrate against other data.)
pub fn send_to_sign_in(wanted: &axum::http::Uri) -> Response {
    use axum::response::{IntoResponse, Redirect};
    let wanted = wanted.path_and_query().map_or("/", |p| p.as_str());
    Redirect::to(&format!("/sign-in?next={}", domain::identity::query_value(wanted))).into_response()
}
