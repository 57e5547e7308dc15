//! The sweeper: finds running operations that stalled, classifies them, and records it — and rerunning ones
//! whose rerun stalled again, whose request then ends as failed. Safe with several server processes: the status
//! change is a compare-and-set (`WHERE status = …`), so exactly one instance records each stall and its audit
//! event.
use crate::{AppState, db};
use contract::AppError;

const PAGE: i64 = 500;

/// One pass over all running operations (and requests past their approval's validity); returns how many
/// operations it marked stalled.
pub async fn sweep(state: &AppState) -> Result<usize, AppError> {
    let mut marked = 0;
    let mut after = 0;
    loop {
        let mut read = state.db.begin_read().await?;
        let page = db::operations::running_after(&mut read, after, PAGE).await?;
        let mut candidates = Vec::new();
        for operation in &page {
            let steps = db::operations::steps(&mut read, operation.id).await?;
            candidates.push((operation.clone(), steps));
        }
        drop(read);
        for (operation, steps) in candidates {
            if super::stalls::stalled_and_reconciled(state, &operation, &steps).await? {
                marked += 1;
            }
        }
        match page.last() {
            Some(last) if page.len() as i64 == PAGE => after = last.id,
            _ => break,
        }
    }
    let expired = super::approvals::expire_overdue(state).await? + super::batches::expire_overdue(state).await?;
    if expired > 0 {
        tracing::info!(expired, "rerun requests or bulk reruns expired without a decision");
    }
    super::batches::resume_stale_previews(state).await?;
    super::batches::complete_ended(state).await?;
    super::batches::check_stages(state).await?;
    Ok(marked)
}
