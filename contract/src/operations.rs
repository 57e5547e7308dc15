//! Operations as the ingestion API and the pages see them.
use chrono::{DateTime, Utc};
use domain::ai::Usage;
use domain::operations::{OperationStatus, StepEventType, StepState};
use domain::reconciliation::{Evidence, Verdict};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// `POST /api/v1/operations`: one run of a workflow, with every step's idempotency key.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct RegisterOperation {
    /// The integration's own ID of this run; unique.
    #[cfg_attr(feature = "ssr", schema(min_length = 1, max_length = 128, pattern = "^[A-Za-z0-9._:/-]+$"))]
    pub process_id: String,
    /// A workflow name from the configuration.
    pub workflow: String,
    /// The workflow's department code; must be in the token's scope.
    #[cfg_attr(feature = "ssr", schema(min_length = 1, max_length = 32, pattern = "^[a-z0-9_-]+$"))]
    pub department: String,
    /// Order ID, invoice number…: a second operation with the same key is flagged as a possible duplicate.
    #[serde(default)]
    pub business_key: Option<String>,
    #[serde(default)]
    #[cfg_attr(feature = "ssr", schema(value_type = Option<Object>))]
    pub content: Option<Value>,
    /// Every step of the workflow, each with the idempotency key the outside system sees.
    pub steps: Vec<RegisterStep>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct RegisterStep {
    pub name: String,
    /// Printable ASCII, no spaces; distinct within the operation.
    #[cfg_attr(feature = "ssr", schema(min_length = 1, max_length = 255, pattern = "^[!-~]+$"))]
    pub idempotency_key: String,
    #[serde(default)]
    #[cfg_attr(feature = "ssr", schema(value_type = Option<Object>))]
    pub content: Option<Value>,
}

/// `POST /api/v1/operations/{process_id}/steps/{step}/events`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct StepEvent {
    /// Per-step sequence number: an event not newer than the stored one is not applied.
    #[cfg_attr(feature = "ssr", schema(minimum = 0))]
    pub seq: i64,
    #[serde(rename = "type")]
    pub kind: StepEventType,
    /// The outside system's ID of the result (`succeeded`).
    #[serde(default)]
    pub result_id: Option<String>,
    #[serde(default)]
    pub error: Option<ReportedError>,
    /// When it happened at the sender; the server's time when absent.
    #[serde(default)]
    pub at: Option<DateTime<Utc>>,
    /// AI steps: the tokens the generation used so far (a cancelled generation is not free).
    #[serde(default)]
    pub usage: Option<Usage>,
}

/// What went wrong, as an integration reports it with a `failed` or `unknown` event: a class of the one list
/// (another is refused with 422 naming them) and a message for people.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct ReportedError {
    pub class: domain::stall::ErrorClass,
    pub message: String,
}

/// A step's last error as stored (steps reported before the classes were checked may carry another class).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct StepError {
    pub class: String,
    pub message: String,
}

/// The registration's answer: the new operation, and what the integration should fix although it was accepted.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct Registered {
    #[serde(flatten)]
    pub operation: OperationView,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<RegistrationWarning>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct RegistrationWarning {
    pub kind: WarningKind,
    pub step: String,
    /// What is wrong and what to do, in English.
    pub message: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum WarningKind {
    /// A side-effecting step whose outside system's records carry fields was registered without step content:
    /// reconciliation can only say "executed, content not compared", never that another amount was executed.
    StepContentMissing,
    /// A side-effecting step's content has none of the fields its connector reads: nothing is compared.
    StepContentNotRead,
    /// A side-effecting step's connector reads no field of the outside system's records: nothing is compared.
    ConnectorReadsNoField,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct OperationView {
    pub process_id: String,
    pub workflow: String,
    pub department: String,
    pub business_key: Option<String>,
    pub status: OperationStatus,
    /// One of the ten events of the decision table, once the operation stalled.
    pub event: Option<String>,
    pub failure_class: Option<domain::stall::FailureClass>,
    /// Another operation with the same business key: a possible business-level duplicate.
    pub possible_duplicate_of: Option<String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub steps: Vec<StepView>,
    /// Set only for a drill's practice operation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drill_id: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct StepView {
    pub position: i64,
    pub name: String,
    pub state: StepState,
    pub idempotency_key: String,
    pub result_id: Option<String>,
    pub attempts: i64,
    pub last_seq: Option<i64>,
    /// The completion flag: set only when success is confirmed.
    pub completed_at: Option<DateTime<Utc>>,
    pub error: Option<StepError>,
    /// The verdict of the latest reconciliation: what the outside system says happened.
    pub latest_verdict: Option<Verdict>,
    /// The latest reconciliation with its evidence (in `GET /api/v1/operations/{process_id}` and on the pages).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reconciliation: Option<ReconciliationView>,
    /// AI steps: every generation seen, with usage and cost; one is adopted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ai_attempts: Vec<AiAttemptView>,
}

/// One AI generation of a step.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct AiAttemptView {
    pub result_id: String,
    /// `queued`, `in_progress`, `completed`, `failed`, `cancelled` or `incomplete`.
    pub background_status: Option<domain::ai::AiStatus>,
    /// The integration asked the provider to cancel; not the same as the provider confirming it.
    pub cancel_requested_at: Option<DateTime<Utc>>,
    pub cancel_confirmed_at: Option<DateTime<Utc>>,
    pub usage: Option<Usage>,
    /// The cost estimate in millionths of a yen (from the connector's prices).
    pub cost_micro_yen: Option<i64>,
    /// The generation whose output counts; the others are kept for cost and evidence.
    pub adopted: bool,
    pub first_seen_at: DateTime<Utc>,
}

/// One look-up of one step at its outside system.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct ReconciliationView {
    pub verdict: Verdict,
    pub connector: String,
    pub checked_at: DateTime<Utc>,
    /// `system:sweeper`, `user:<name>`, `manual:<name>`…
    pub asked_by: String,
    /// The person who asked (or recorded the verdict by hand), by name: pages only, the API names them in
    /// `asked_by`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub asked_by_person: Option<String>,
    pub evidence: Evidence,
    /// When the step completed after this look-up (a rerun succeeded): the verdict no longer describes the step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub superseded_at: Option<DateTime<Utc>>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct StepEventAnswer {
    pub applied: bool,
    pub step: StepView,
}
