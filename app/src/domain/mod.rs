//! Pure rules of Rerun Gate: no SQL, no HTTP, no Leptos. Compiles to wasm and is unit-tested in place.
pub mod ai;
pub mod approval;
pub mod audit;
pub mod canonical_json;
pub mod configuration;
pub mod decision_table;
pub mod fingerprint;
pub mod holds;
pub mod ids;
pub mod operations;
pub mod password_policy;
pub mod reconciliation;
pub mod rerun_plan;
pub mod checklist;
pub mod roles;
pub mod stall;
pub mod webhooks;
