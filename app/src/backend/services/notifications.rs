//! Notifications about rerun requests: to the owners when their approval is asked or a rerun failed, to the
//! requester at every decision and at the end. In-app, written in the transaction of the change.
use super::Caller;
use crate::api::AppError;
use crate::api::notifications::NotificationView;
use crate::backend::{AppState, db};
use chrono::{DateTime, Utc};

/// Who hears of a request's new state.
pub enum Audience {
    Owners,
    Requester,
    Both,
}

/// Notifies the audience of `request` (its ID, requester, department) in the caller's transaction.
pub async fn notify(
    tx: &mut db::Tx,
    request: &db::rerun_requests::RequestRow,
    kind: &str,
    title: &str,
    audience: Audience,
    now: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    let mut users = Vec::new();
    if matches!(audience, Audience::Owners | Audience::Both) {
        users = db::notifications::owners_of(tx, &request.department).await?;
        users.retain(|u| *u != request.requested_by);
    }
    if matches!(audience, Audience::Requester | Audience::Both) {
        users.push(request.requested_by);
    }
    let link = format!("/reruns/{}", request.id);
    let title = format!("{} — {title}", request.process_id);
    for user in users {
        db::notifications::insert(tx, user, kind, &title, &link, now).await?;
    }
    Ok(())
}

pub async fn unread(state: &AppState, caller: &Caller) -> Result<i64, AppError> {
    let mut tx = state.db.connection().await?;
    Ok(db::notifications::unread_count(&mut tx, caller.user.user.id).await?)
}

pub async fn latest(state: &AppState, caller: &Caller) -> Result<Vec<NotificationView>, AppError> {
    let mut tx = state.db.begin_read().await?;
    let rows = db::notifications::latest(&mut tx, caller.user.user.id, 50).await?;
    Ok(rows
        .into_iter()
        .map(|r| NotificationView { id: r.id, kind: r.kind, title: r.title, link: r.link, created_at: r.created_at, read: r.read_at.is_some() })
        .collect())
}

pub async fn mark_all_read(state: &AppState, caller: &Caller) -> Result<(), AppError> {
    let mut tx = state.db.begin_write().await?;
    db::notifications::mark_all_read(&mut tx, caller.user.user.id, state.clock.now()).await?;
    tx.commit().await?;
    Ok(())
}
