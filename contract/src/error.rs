//! The one error type that crosses the wire. Internal causes are logged on the server and never sent.
pub use domain::conflict::Conflict;
use domain::invalid::{Field, Invalid, Rule};
use domain::rerun_request::{Refused, RequestEvent};
use serde::{Deserialize, Serialize};
use server_fn::codec::JsonEncoding;
use server_fn::error::{FromServerFnError, ServerFnErrorErr};

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FieldError {
    pub field: Field,
    pub message: String,
    /// Which rule refused it, for the pages to put into words (absent: the message is all there is).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule: Option<Rule>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
pub enum AppError {
    #[error("please sign in")]
    Unauthorized,
    /// A call of the JSON API whose `Authorization: Bearer` token is missing, or names no API client in force.
    #[error("{}", .0.what_to_do())]
    ApiToken(TokenProblem),
    #[error("you are not allowed to do this")]
    Forbidden,
    /// A decision needs a recent sign-in; `/sign-in/again` brings the person back once they signed in anew.
    #[error("please sign in again before this decision")]
    SignInAgain,
    #[error("not found")]
    NotFound,
    #[error("{}", .0.iter().map(|e| e.message.as_str()).collect::<Vec<_>>().join("; "))]
    Validation(Vec<FieldError>),
    /// The request is well-formed but contradicts what is stored; `problem` names which rule.
    #[error("{detail}")]
    Conflict { problem: Conflict, detail: String },
    #[error("{0}")]
    BadRequest(String),
    #[error("too many attempts; try again in {retry_after_secs} seconds")]
    TooManyRequests { retry_after_secs: u64 },
    /// The server is saturated: it sheds the request at once rather than keep it waiting (503, `Retry-After`).
    #[error("the server is busy; try again in {retry_after_secs} seconds")]
    Busy { retry_after_secs: u64 },
    #[error("something went wrong on our side; it has been logged")]
    Internal,
    /// Transport problems seen by the browser (network down, response unreadable).
    #[error("the server could not be reached: {0}")]
    Transport(String),
}

/// What is wrong with an API call's token.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum TokenProblem {
    Missing,
    /// Unknown, mistyped or revoked: they look the same from here.
    NotValid,
}

impl TokenProblem {
    pub fn what_to_do(self) -> &'static str {
        match self {
            TokenProblem::Missing => "send the API token in the header `Authorization: Bearer <token>`",
            TokenProblem::NotValid => {
                "the API token is not valid: it is unknown, mistyped or revoked; an admin creates a new one \
                 (`server token create --name … --department …`) and revokes the old one on the API clients page"
            }
        }
    }
}

impl AppError {
    pub fn invalid(field: Field, problem: impl Into<Invalid>) -> Self {
        let Invalid { rule, message } = problem.into();
        AppError::Validation(vec![FieldError { field, message, rule: Some(rule) }])
    }

    pub fn conflict(problem: Conflict, detail: impl ToString) -> Self {
        AppError::Conflict { problem, detail: detail.to_string() }
    }

    /// The last part of the problem type URI of an `application/problem+json` answer.
    pub fn problem(&self) -> &str {
        match self {
            AppError::Unauthorized => "unauthorized",
            AppError::ApiToken(TokenProblem::Missing) => "token-missing",
            AppError::ApiToken(TokenProblem::NotValid) => "invalid-token",
            AppError::Forbidden => "forbidden",
            AppError::SignInAgain => "sign-in-again",
            AppError::NotFound => "not-found",
            AppError::Validation(_) => "validation",
            AppError::Conflict { problem, .. } => problem.as_str(),
            AppError::BadRequest(_) => "bad-request",
            AppError::TooManyRequests { .. } => "too-many-requests",
            AppError::Busy { .. } => "busy",
            AppError::Internal | AppError::Transport(_) => "internal",
        }
    }

    pub fn status(&self) -> u16 {
        match self {
            AppError::Unauthorized | AppError::SignInAgain | AppError::ApiToken(_) => 401,
            AppError::Forbidden => 403,
            AppError::NotFound => 404,
            AppError::Validation(_) => 422,
            AppError::Conflict { .. } => 409,
            AppError::BadRequest(_) => 400,
            AppError::TooManyRequests { .. } => 429,
            AppError::Busy { .. } => 503,
            AppError::Internal | AppError::Transport(_) => 500,
        }
    }
}

/// A move the request's state table refuses: the request is not (or no longer) in a state that allows it.
impl From<Refused> for AppError {
    fn from(refused: Refused) -> Self {
        let problem = match refused.event {
            RequestEvent::Submit => Conflict::NotDraft,
            RequestEvent::Withdraw => Conflict::NotCancellable,
            RequestEvent::Approve | RequestEvent::Reject => Conflict::NotPending,
            _ => Conflict::RequestState,
        };
        AppError::conflict(problem, refused)
    }
}

impl FromServerFnError for AppError {
    type Encoder = JsonEncoding;

    fn from_server_fn_error(value: ServerFnErrorErr) -> Self {
        match value {
            // A malformed request from a client is the client's mistake, not ours.
            ServerFnErrorErr::Args(message) | ServerFnErrorErr::MissingArg(message) => {
                AppError::invalid(Field::Request, Invalid::new(Rule::Malformed, message))
            }
            // On the server it is the request's body that could not be read; in the browser, the answer.
            #[cfg(feature = "ssr")]
            ServerFnErrorErr::Deserialization(message) => {
                AppError::invalid(Field::Request, Invalid::new(Rule::Malformed, message))
            }
            #[cfg(not(feature = "ssr"))]
            ServerFnErrorErr::Deserialization(message) => AppError::Transport(message),
            ServerFnErrorErr::Request(message) | ServerFnErrorErr::Response(message) => AppError::Transport(message),
            _ => AppError::Internal,
        }
    }
}

/// An error the client must not see the details of: logged with its context, answered as `internal`.
#[cfg(feature = "ssr")]
impl AppError {
    pub fn internal(context: &str, error: impl std::fmt::Display) -> AppError {
        tracing::error!(error = %error, "{context}");
        AppError::Internal
    }
}

#[cfg(feature = "ssr")]
impl From<sqlx::Error> for AppError {
    fn from(error: sqlx::Error) -> Self {
        match error {
            // No connection within the pool's timeout: saturated, not broken (logged all the same, as it should
            // not happen under admission control).
            sqlx::Error::PoolTimedOut => {
                tracing::error!("database: pool timed out while waiting for an open connection");
                AppError::Busy { retry_after_secs: 1 }
            }
            error => AppError::internal("database", error),
        }
    }
}

#[cfg(feature = "ssr")]
impl From<anyhow::Error> for AppError {
    fn from(error: anyhow::Error) -> Self {
        AppError::internal("server", error)
    }
}
