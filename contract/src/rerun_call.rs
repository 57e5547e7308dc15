//! The rerun call: what Rerun Gate POSTs to a workflow's `rerun_url` once a rerun is approved (Standard Webhooks
//! signed, `webhook-id` = `Idempotency-Key` = the rerun ID on every attempt), and what the receiver answers. The
//! OpenAPI document publishes both under `webhooks`; the client kits implement the receiving side.
use chrono::{DateTime, Utc};
pub use domain::conformance::RerunOutcome;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct RerunCall {
    #[serde(rename = "type")]
    pub kind: RerunCallType,
    pub rerun_id: String,
    pub process_id: String,
    pub workflow: String,
    /// Only the steps to run again, each with its original idempotency key (the outside system deduplicates).
    pub steps: Vec<RerunCallStep>,
    /// Display names, as people know them; they can change.
    pub requested_by: String,
    pub approved_by: Vec<String>,
    /// The same people by their stable user ID (the audit trail's actor IDs).
    pub requested_by_id: i64,
    pub approved_by_ids: Vec<i64>,
    pub approved_at: Option<DateTime<Utc>>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub enum RerunCallType {
    /// Run the listed steps again.
    #[serde(rename = "rerun.approved")]
    Approved,
    /// A conformance check's call (`server integration check`): verify and deduplicate it, change nothing.
    #[serde(rename = "rerun.test")]
    Test,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct RerunCallStep {
    pub name: String,
    pub idempotency_key: String,
}

/// What a receiver built with the client kits answers (optional for other receivers: only the status counts).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct RerunAnswer {
    pub outcome: RerunOutcome,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}
