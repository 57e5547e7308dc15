//! The audit trail page: events as the caller may see them, newest first, with before/after as a diff.
use super::AppError;
pub use crate::contract::audit::*;
use crate::domain::audit_export::AuditFilterForm;
use leptos::prelude::*;
use leptos::server_fn::codec::Json;
#[cfg(feature = "ssr")]
use {
    super::context,
    crate::backend::services::audit_trail::{self, ChainStatus},
    crate::domain::roles::Role,
    crate::words::audit::{action_code_label_in, reason_label_in, stored_actor_kind_label_in, stored_actor_label_in},
};

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
                actor_kind: stored_actor_kind_label_in(caller.locale, &e.actor_kind),
                actor: stored_actor_label_in(caller.locale, &e.actor_kind, &e.actor_label),
                action_label: action_code_label_in(caller.locale, &e.action),
                action: e.action,
                object_type: e.object_type,
                object_id: e.object_id,
                department: e.department,
                reason: reason_label_in(caller.locale, e.reason),
            })
            .collect();
        Ok(AuditPageView { rows, next, chain, may_export: caller.user().has(Role::Auditor) })
    })
    .await
}
