//! What `/metrics` reads from the database at each scrape.
use super::{Conn, on_conn};

pub struct Snapshot {
    pub stalled_by_event: Vec<(String, i64)>,
    pub pending_approvals: i64,
    pub dispatches_by_status: Vec<(String, i64)>,
    pub look_ups: Vec<(String, String, i64)>,
}

pub async fn snapshot(tx: &mut Conn) -> Result<Snapshot, sqlx::Error> {
    let stalled_by_event = on_conn!(tx, |c| sqlx::query_as(
        "SELECT COALESCE(event, 'unclassified'), COUNT(*) FROM operations WHERE status = 'stalled' GROUP BY event"
    )
    .fetch_all(c)
    .await)?;
    let pending_approvals =
        on_conn!(tx, |c| sqlx::query_scalar("SELECT COUNT(*) FROM rerun_requests WHERE status = 'pending_approval'")
            .fetch_one(c)
            .await)?;
    let dispatches_by_status =
        on_conn!(tx, |c| sqlx::query_as("SELECT status, COUNT(*) FROM dispatches GROUP BY status").fetch_all(c).await)?;
    let look_ups = on_conn!(tx, |c| sqlx::query_as(
        "SELECT connector, verdict, COUNT(*) FROM reconciliations GROUP BY connector, verdict"
    )
    .fetch_all(c)
    .await)?;
    Ok(Snapshot { stalled_by_event, pending_approvals, dispatches_by_status, look_ups })
}
