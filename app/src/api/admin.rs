//! The admin's people pages.
use super::{AppError, DepartmentDto};
use crate::domain::roles::Role;
use leptos::prelude::*;
use leptos::server_fn::codec::Json;
use serde::{Deserialize, Serialize};
#[cfg(feature = "ssr")]
use {
    super::context,
    crate::backend::services,
};

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct UserSummary {
    pub id: i64,
    pub username: String,
    pub display_name: String,
    pub roles: Vec<Role>,
    pub departments: Vec<String>,
    pub disabled: bool,
    pub email: Option<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NewUser {
    pub username: String,
    pub display_name: String,
    pub password: String,
    pub roles: Vec<Role>,
    pub departments: Vec<String>,
    /// For e-mail notifications; empty: none.
    #[serde(default)]
    pub email: String,
}

#[server(endpoint = "admin/list_users")]
pub async fn list_users() -> Result<Vec<UserSummary>, AppError> {
    context::read_once("admin/list_users", async {
        let (state, caller) = context::caller().await?;
        services::users::list(&state, &caller).await
    })
    .await
}

#[server(endpoint = "admin/list_departments")]
pub async fn list_departments() -> Result<Vec<DepartmentDto>, AppError> {
    context::read_once("admin/list_departments", async {
        let (state, caller) = context::caller().await?;
        services::users::departments(&state, &caller).await
    })
    .await
}

#[server(endpoint = "admin/add_user", input = Json)]
pub async fn add_user(new: NewUser) -> Result<i64, AppError> {
    let (state, caller) = context::caller().await?;
    services::users::add_by_admin(&state, &caller, new).await
}

#[server(endpoint = "admin/set_user_disabled")]
pub async fn set_user_disabled(user_id: i64, disabled: bool) -> Result<(), AppError> {
    let (state, caller) = context::caller().await?;
    services::users::set_disabled(&state, &caller, user_id, disabled).await
}

#[server(endpoint = "admin/set_user_roles", input = Json)]
pub async fn set_user_roles(user_id: i64, roles: Vec<Role>, departments: Vec<String>) -> Result<(), AppError> {
    let (state, caller) = context::caller().await?;
    services::users::set_roles(&state, &caller, user_id, roles, departments).await
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApiClientSummary {
    pub id: i64,
    pub name: String,
    pub departments: Vec<String>,
    pub created_at: chrono::DateTime<chrono::Utc>,
    pub revoked: bool,
}

/// The configuration loaded at start-up, read-only (it names environment variables, never secrets).
#[server(endpoint = "admin/configuration")]
pub async fn loaded_configuration() -> Result<crate::domain::configuration::Config, AppError> {
    context::read_once("admin/configuration", async {
        let (state, caller) = context::caller().await?;
        caller.require(Role::Admin)?;
        Ok((*state.config).clone())
    })
    .await
}

#[server(endpoint = "admin/list_api_clients")]
pub async fn list_api_clients() -> Result<Vec<ApiClientSummary>, AppError> {
    context::read_once("admin/list_api_clients", async {
        let (state, caller) = context::caller().await?;
        services::api_clients::list(&state, &caller).await
    })
    .await
}

#[server(endpoint = "admin/revoke_api_client")]
pub async fn revoke_api_client(id: i64) -> Result<(), AppError> {
    let (state, caller) = context::caller().await?;
    caller.require(Role::Admin)?;
    services::api_clients::revoke(&state, caller.actor(), id, caller.request_id.as_deref()).await
}
