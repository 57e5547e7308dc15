//! The admin's people pages.
use crate::contract::admin::*;
use crate::contract::{AppError, DepartmentDto};
use crate::domain::membership::Membership;
use crate::domain::roles::Role;
use leptos::prelude::*;
use leptos::server_fn::codec::Json;
#[cfg(feature = "ssr")]
use {super::context, crate::backend::services};

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

/// What another person holds: organisation-wide roles, and memberships (one by one, or `roles` × `departments`).
#[server(endpoint = "admin/set_user_roles", input = Json)]
pub async fn set_user_roles(
    user_id: i64,
    roles: Vec<Role>,
    #[server(default)] departments: Vec<String>,
    #[server(default)] memberships: Vec<Membership>,
) -> Result<(), AppError> {
    let (state, caller) = context::caller().await?;
    services::users::set_access(&state, &caller, user_id, roles, departments, memberships).await
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

/// Test calls to a workflow's rerun endpoint (`rerun.test`, which changes nothing), each judged; recorded in the
/// audit trail.
#[server(endpoint = "admin/check_receiver")]
pub async fn check_receiver(workflow: String) -> Result<ReceiverCheck, AppError> {
    let (state, caller) = context::caller().await?;
    caller.require(Role::Admin)?;
    let request_id = caller.request_id.as_deref();
    services::conformance::check(&state, caller.actor(), request_id, &workflow, Default::default()).await
}

/// The audit signing key's fingerprint, and the newest signed checkpoint.
#[server(endpoint = "admin/audit_signing")]
pub async fn audit_signing() -> Result<crate::contract::audit::SigningView, AppError> {
    context::read_once("admin/audit_signing", async {
        let (state, caller) = context::caller().await?;
        caller.require(Role::Admin)?;
        services::audit_proof::signing(&state).await
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

/// Every link between a user and a chat account.
#[server(endpoint = "admin/chat_links")]
pub async fn chat_links() -> Result<Vec<crate::contract::chat::ChatLinkView>, AppError> {
    context::read_once("admin/chat_links", async {
        let (state, caller) = context::caller().await?;
        services::chat::all_links(&state, &caller).await
    })
    .await
}

#[server(endpoint = "admin/revoke_api_client")]
pub async fn revoke_api_client(id: i64) -> Result<(), AppError> {
    let (state, caller) = context::caller().await?;
    caller.require(Role::Admin)?;
    services::api_clients::revoke(&state, caller.actor(), id, caller.request_id.as_deref()).await
}
