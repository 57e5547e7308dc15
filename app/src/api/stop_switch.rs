//! The stop switch: pause dispatches per workflow or outside system (connector), and resume them, with reasons.
use super::AppError;
use crate::domain::stop_switch::Scope;
use chrono::{DateTime, Utc};
use leptos::prelude::*;
use serde::{Deserialize, Serialize};
#[cfg(feature = "ssr")]
use {super::context, crate::backend::services};

/// An open pause.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PauseView {
    /// `workflow` or `connector`.
    pub scope: String,
    pub name: String,
    pub paused_by: String,
    pub paused_at: DateTime<Utc>,
    pub reason: String,
}

/// One workflow or connector on the stop-switch page.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SwitchView {
    pub scope: Scope,
    pub name: String,
    /// The departments whose reruns it concerns.
    pub departments: Vec<String>,
    pub pause: Option<PauseView>,
    pub may_switch: bool,
}

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
