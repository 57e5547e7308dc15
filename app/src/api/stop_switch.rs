//! The stop switch: pause dispatches per workflow or outside system (connector), and resume them, with reasons.
use crate::contract::AppError;
use crate::contract::stop_switch::*;
use crate::domain::stop_switch::Scope;
use leptos::prelude::*;
#[cfg(feature = "ssr")]
use {super::context, crate::backend::services};

#[server(endpoint = "stop_switch/overview")]
pub async fn stop_switch_overview() -> Result<Vec<SwitchView>, AppError> {
    context::read_once("stop_switch/overview", async {
        let (state, caller) = context::caller().await?;
        services::stop_switch::overview(&state, &caller).await
    })
    .await
}

#[server(endpoint = "stop_switch/pause")]
pub async fn pause_dispatches(scope: Scope, name: String, reason: String) -> Result<(), AppError> {
    let (state, caller) = context::caller().await?;
    services::stop_switch::pause(&state, &caller, scope, &name, &reason).await
}

#[server(endpoint = "stop_switch/resume")]
pub async fn resume_dispatches(scope: Scope, name: String, reason: String) -> Result<(), AppError> {
    let (state, caller) = context::caller().await?;
    services::stop_switch::resume(&state, &caller, scope, &name, &reason).await
}
