//! The audit trail page: events as the caller may see them, newest first, with before/after as a diff.
use crate::contract::AppError;
use crate::contract::audit::*;
use crate::domain::audit_export::AuditFilterForm;
use leptos::prelude::*;
use leptos::server_fn::codec::Json;
#[cfg(feature = "ssr")]
use {super::context, crate::backend::services};

/// One page of the trail; `routine` also shows the sign-ins, sign-outs and language changes.
#[server(endpoint = "audit/page", input = Json)]
pub async fn audit_page(
    filter: AuditFilterForm,
    before: Option<i64>,
    #[server(default)] routine: bool,
) -> Result<AuditPageView, AppError> {
    context::read_once(("audit/page", &filter, &before, routine), async {
        let (state, caller) = context::caller().await?;
        let parsed = filter.parse().map_err(|(field, why)| AppError::invalid(field, why))?;
        services::audit_page::page(&state, &caller, &parsed, before, routine).await
    })
    .await
}

/// "Prove this event": its inclusion proof in the trail's Merkle tree, against the newest signed tree head.
#[server(endpoint = "audit/prove")]
pub async fn prove_event(seq: i64) -> Result<EventProof, AppError> {
    let (state, caller) = context::caller().await?;
    services::audit_tree::prove_event(&state, &caller, seq, None).await
}
