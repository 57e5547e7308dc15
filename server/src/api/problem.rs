//! Errors of the JSON API as `application/problem+json` (RFC 9457). The type URI ends in the problem's slug,
//! e.g. `/problems/idempotency-key-mismatch`; internal causes never reach the body.
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use contract::error::TokenProblem;
use contract::{AppError, FieldError};
use serde::Serialize;

pub const PROBLEM_JSON: &str = "application/problem+json";

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct ProblemBody {
    #[serde(rename = "type")]
    pub kind: String,
    pub title: String,
    pub status: u16,
    pub detail: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[schema(value_type = Vec<Object>)]
    pub errors: Vec<FieldError>,
}

pub struct Problem(pub AppError);

impl From<AppError> for Problem {
    fn from(error: AppError) -> Self {
        Problem(error)
    }
}

impl IntoResponse for Problem {
    fn into_response(self) -> Response {
        let status = StatusCode::from_u16(self.0.status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let body = ProblemBody {
            kind: format!("/problems/{}", self.0.problem()),
            title: status.canonical_reason().unwrap_or("Error").to_string(),
            status: status.as_u16(),
            detail: self.0.to_string(),
            errors: match &self.0 {
                AppError::Validation(errors) => errors.clone(),
                _ => Vec::new(),
            },
        };
        let mut response = (status, serde_json::to_string(&body).unwrap_or_default()).into_response();
        let headers = response.headers_mut();
        headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(PROBLEM_JSON));
        match &self.0 {
            AppError::Unauthorized | AppError::ApiToken(TokenProblem::Missing) => {
                headers.insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            }
            // RFC 6750: a token was sent and is not good.
            AppError::ApiToken(TokenProblem::NotValid) => {
                headers.insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer error=\"invalid_token\""));
            }
            AppError::TooManyRequests { retry_after_secs } | AppError::Busy { retry_after_secs } => {
                if let Ok(value) = HeaderValue::from_str(&retry_after_secs.to_string()) {
                    headers.insert(header::RETRY_AFTER, value);
                }
            }
            _ => {}
        }
        response
    }
}
