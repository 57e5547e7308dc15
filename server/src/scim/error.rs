//! SCIM's own error body (RFC 7644 §3.12): `status` as a string, a `scimType` where the RFC names one, and the
//! detail a directory's provisioning log shows to whoever set it up.
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use contract::AppError;
use contract::error::TokenProblem;
use domain::conflict::Conflict;

pub const SCIM_JSON: &str = "application/scim+json";
const ERROR_SCHEMA: &str = "urn:ietf:params:scim:api:messages:2.0:Error";

#[derive(Debug)]
pub struct ScimError {
    pub status: StatusCode,
    pub scim_type: Option<&'static str>,
    pub detail: String,
    retry_after: Option<u64>,
}

impl ScimError {
    pub fn new(status: StatusCode, scim_type: Option<&'static str>, detail: impl Into<String>) -> ScimError {
        ScimError { status, scim_type, detail: detail.into(), retry_after: None }
    }
    /// A filter the grammar does not parse, or that asks what this server cannot answer.
    pub fn invalid_filter(detail: impl Into<String>) -> ScimError {
        ScimError::new(StatusCode::BAD_REQUEST, Some("invalidFilter"), detail)
    }
    /// A body that is not the resource or message it should be (not JSON, an unknown attribute).
    pub fn invalid_syntax(detail: impl Into<String>) -> ScimError {
        ScimError::new(StatusCode::BAD_REQUEST, Some("invalidSyntax"), detail)
    }
    pub fn invalid_value(detail: impl Into<String>) -> ScimError {
        ScimError::new(StatusCode::BAD_REQUEST, Some("invalidValue"), detail)
    }
    pub fn invalid_path(detail: impl Into<String>) -> ScimError {
        ScimError::new(StatusCode::BAD_REQUEST, Some("invalidPath"), detail)
    }
    pub fn mutability(detail: impl Into<String>) -> ScimError {
        ScimError::new(StatusCode::BAD_REQUEST, Some("mutability"), detail)
    }
    pub fn not_found() -> ScimError {
        ScimError::new(StatusCode::NOT_FOUND, None, "no such resource")
    }
}

impl From<AppError> for ScimError {
    fn from(error: AppError) -> ScimError {
        let detail = error.to_string();
        let status = StatusCode::from_u16(error.status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let mut scim = match &error {
            AppError::Validation(_) | AppError::BadRequest(_) => ScimError::invalid_value(detail),
            AppError::Conflict { problem: Conflict::UsernameTaken, .. } => {
                ScimError::new(StatusCode::CONFLICT, Some("uniqueness"), detail)
            }
            AppError::NotFound => ScimError::not_found(),
            _ => ScimError::new(status, None, detail),
        };
        if let AppError::TooManyRequests { retry_after_secs } | AppError::Busy { retry_after_secs } = error {
            scim.retry_after = Some(retry_after_secs);
        }
        scim
    }
}

impl IntoResponse for ScimError {
    fn into_response(self) -> Response {
        let mut body = serde_json::json!({
            "schemas": [ERROR_SCHEMA],
            "status": self.status.as_u16().to_string(),
            "detail": self.detail,
        });
        if let Some(kind) = self.scim_type {
            body["scimType"] = kind.into();
        }
        let mut response = (self.status, body.to_string()).into_response();
        let headers = response.headers_mut();
        headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(SCIM_JSON));
        if self.status == StatusCode::UNAUTHORIZED {
            headers.insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        if let Some(seconds) = self.retry_after.and_then(|s| HeaderValue::from_str(&s.to_string()).ok()) {
            headers.insert(header::RETRY_AFTER, seconds);
        }
        response
    }
}

/// The directory's bearer token, and only it: an ingestion token, a revoked or unknown one is 401.
pub struct Directory(pub backend::services::api_clients::ApiClient);

impl axum::extract::FromRequestParts<backend::AppState> for Directory {
    type Rejection = ScimError;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        state: &backend::AppState,
    ) -> Result<Self, Self::Rejection> {
        use backend::services::api_clients;
        use domain::directory::ClientPurpose;
        let token =
            crate::api::client::bearer_token(&parts.headers).ok_or(AppError::ApiToken(TokenProblem::Missing))?;
        match api_clients::authenticate(state, token).await? {
            Some(client) if client.purpose == ClientPurpose::Directory => {
                api_clients::take_turn(state, &client)?;
                Ok(Directory(client))
            }
            _ => {
                tracing::warn!("SCIM call with an unknown or revoked token, or one not the directory's");
                Err(AppError::ApiToken(TokenProblem::NotValid).into())
            }
        }
    }
}
