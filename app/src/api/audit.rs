//! The audit trail page: events as the caller may see them, newest first, with before/after as a diff.
use super::AppError;
use crate::domain::audit::DiffLine;
use crate::domain::audit_export::AuditFilterForm;
use chrono::{DateTime, Utc};
use leptos::prelude::*;
use leptos::server_fn::codec::Json;
use serde::{Deserialize, Serialize};
#[cfg(feature = "ssr")]
use {
    super::context,
    crate::backend::services::audit_trail::{self, ChainStatus},
    crate::domain::roles::Role,
};

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditRow {
    pub seq: i64,
    pub at: DateTime<Utc>,
    pub actor_kind: String,
    pub actor: String,
    pub action: String,
    pub object_type: String,
    pub object_id: String,
    pub department: Option<String>,
    pub reason: Option<String>,
    pub diff: Vec<DiffLine>,
}

/// The chain as the last incremental check found it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ChainView {
    Intact { seq: i64, checked_at: DateTime<Utc> },
    Broken { seq: i64, problem: String },
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditPageView {
    pub rows: Vec<AuditRow>,
    /// Pass as `before` for the next (older) page; `None` on the last page.
    pub next: Option<i64>,
    pub chain: ChainView,
    /// Auditors may download the trail.
    pub may_export: bool,
}

#[server(endpoint = "audit/page", input = Json)]
pub async fn audit_page(filter: AuditFilterForm, before: Option<i64>) -> Result<AuditPageView, AppError> {
    context::read_once(("audit/page", &filter, &before), async {
        let (state, caller) = context::caller().await?;
        let parsed = filter.parse().map_err(|(field, why)| AppError::invalid(field, why))?;
        let (events, next) = audit_trail::page(&state, &caller, &parsed, before).await?;
        let chain = match audit_trail::chain_status(&state).await? {
            ChainStatus::Intact { seq, checked_at } => ChainView::Intact { seq, checked_at },
            ChainStatus::Broken { seq, problem } => ChainView::Broken { seq, problem },
        };
        let rows = events
            .into_iter()
            .map(|e| AuditRow {
                diff: crate::domain::audit::diff(e.before_json.as_deref(), e.after_json.as_deref()),
                seq: e.seq,
                at: e.at,
                actor_kind: e.actor_kind,
                actor: e.actor_label,
                action: e.action,
                object_type: e.object_type,
                object_id: e.object_id,
                department: e.department,
                reason: e.reason,
            })
            .collect();
        Ok(AuditPageView { rows, next, chain, may_export: caller.user.user.has(Role::Auditor) })
    })
    .await
}
