//! The stalled-operations board and the operation detail page.
use crate::contract::AppError;
use crate::contract::board::*;
use leptos::prelude::*;
use leptos::server_fn::codec::Json;
#[cfg(feature = "ssr")]
use {super::context, crate::backend::services, crate::domain::reconciliation::Verdict};

/// The demo's case the board's 「はじめに」 box points to.
#[cfg(feature = "ssr")]
const DEMO_FIRST_CASE: &str = "ORD-1002";

#[server(endpoint = "board/stalled", input = Json)]
pub async fn stalled_operations(filter: BoardFilter) -> Result<BoardPage, AppError> {
    context::read_once(("board/stalled", &filter), async {
        let (state, caller) = context::caller().await?;
        let mut page = services::board::stalled(&state, &caller, filter.clone()).await?;
        // Newcomers to the demo begin with its first case, while it is on their board (closed, or not theirs: no box).
        let first_case = page.rows.iter().any(|row| row.process_id == DEMO_FIRST_CASE);
        page.demo_start = (state.server.demo_systems && first_case).then(|| DEMO_FIRST_CASE.into());
        Ok(page)
    })
    .await
}

#[server(endpoint = "board/operation")]
pub async fn load_operation(process_id: String) -> Result<OperationDetail, AppError> {
    context::read_once(("board/operation", &process_id), async {
        let (state, caller) = context::caller().await?;
        services::board::detail(&state, &caller, &process_id).await
    })
    .await
}

/// Asks the outside systems again about every step of the operation (staff or manager of its department).
#[server(endpoint = "board/reconcile")]
pub async fn reconcile_now(process_id: String) -> Result<usize, AppError> {
    let (state, caller) = context::caller().await?;
    Ok(services::reconciliation::on_demand(&state, &caller, &process_id).await?.len())
}

/// Puts a stalled operation on hold, with the reason (staff or manager of its department).
#[server(endpoint = "board/hold")]
pub async fn place_hold(process_id: String, reason: String) -> Result<(), AppError> {
    let (state, caller) = context::caller().await?;
    services::holds::place(&state, &caller, &process_id, &reason).await
}

/// Takes an operation off hold, with the reason; it is stalled again.
#[server(endpoint = "board/release")]
pub async fn release_hold(process_id: String, reason: String) -> Result<(), AppError> {
    let (state, caller) = context::caller().await?;
    services::holds::release(&state, &caller, &process_id, &reason).await
}

/// A manager records a step's verdict found out by hand (e.g. the provider's support confirmed nothing was sent).
#[server(endpoint = "board/manual_verdict")]
pub async fn record_manual_verdict(
    process_id: String,
    step: String,
    verdict: String,
    evidence: String,
) -> Result<(), AppError> {
    let (state, caller) = context::caller().await?;
    let verdict = Verdict::parse(&verdict).ok_or_else(|| {
        AppError::invalid(
            crate::domain::invalid::Field::Verdict,
            crate::domain::invalid::Invalid::new(crate::domain::invalid::Rule::Unknown, "unknown verdict"),
        )
    })?;
    services::holds::manual_verdict(&state, &caller, &process_id, &step, verdict, &evidence).await
}

/// Adopts one AI generation of a step: only it counts as the step's result (staff or manager).
#[server(endpoint = "board/adopt")]
pub async fn adopt_ai_attempt(process_id: String, step: String, result_id: String) -> Result<(), AppError> {
    let (state, caller) = context::caller().await?;
    services::ai_attempts::adopt(&state, &caller, &process_id, &step, &result_id).await
}
