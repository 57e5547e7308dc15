//! The API caller, from `Authorization: Bearer <token>` (never from the URL).
use super::problem::Problem;
use axum::extract::FromRequestParts;
use axum::http::header;
use axum::http::request::Parts;
use backend::AppState;
use backend::services::api_clients::{self, ApiClient};
use contract::AppError;
use contract::error::TokenProblem;
use domain::directory::ClientPurpose;

pub struct Client(pub ApiClient);

impl FromRequestParts<AppState> for Client {
    type Rejection = Problem;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Self::Rejection> {
        let Some(token) = bearer_token(&parts.headers) else {
            return Err(Problem(AppError::ApiToken(TokenProblem::Missing)));
        };
        match api_clients::authenticate(state, token).await? {
            // The directory's token provisions people; it never registers operations.
            Some(client) if client.purpose == ClientPurpose::Ingestion => {
                api_clients::take_turn(state, &client)?;
                Ok(Client(client))
            }
            _ => {
                tracing::warn!("API call with an unknown or revoked token, or the directory's");
                Err(Problem(AppError::ApiToken(TokenProblem::NotValid)))
            }
        }
    }
}

/// `Authorization: Bearer <token>`'s token, when there is one.
pub fn bearer_token(headers: &axum::http::HeaderMap) -> Option<&str> {
    headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim)
        .filter(|t| !t.is_empty())
}
