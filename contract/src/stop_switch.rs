//! The stop switch: pause dispatches per workflow or outside system (connector), and resume them, with reasons.
use chrono::{DateTime, Utc};
use domain::stop_switch::Scope;
use serde::{Deserialize, Serialize};

/// An open pause.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PauseView {
    /// `workflow` or `connector`.
    pub scope: String,
    pub name: String,
    /// What its reader calls it (a workflow's title; a connector's name).
    pub title: String,
    pub paused_by: String,
    #[serde(with = "super::wire_time::moment")] // on the board: the first download
    pub paused_at: DateTime<Utc>,
    pub reason: String,
}

/// One workflow or connector on the stop-switch page.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SwitchView {
    pub scope: Scope,
    pub name: String,
    /// What its reader calls it (a workflow's title; a connector's name).
    pub title: String,
    /// The names of the departments whose reruns it concerns.
    pub departments: Vec<String>,
    pub pause: Option<PauseView>,
    pub may_switch: bool,
}
