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

/// Notifies the audience of `request` (its ID, requester, department) in the caller's transaction; and the
/// team's chat, when one is configured (sent after the commit, from an outbox).
pub async fn notify(
    tx: &mut db::Tx,
    state: &AppState,
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
    if state.config.chat_webhook_url_env.is_some() {
        let text = format!("[Rerun Gate] {title} ({}) {}{link}", request.department, state.settings.public_url);
        db::notifications::queue_chat(tx, &text, now).await?;
    }
    Ok(())
}

/// Sends due chat messages (a Slack-compatible `{"text": …}` POST); returns how many were sent.
pub async fn send_chat(state: &AppState) -> Result<usize, AppError> {
    let Some(var) = &state.config.chat_webhook_url_env else { return Ok(0) };
    let Some(url) = std::env::var(var).ok().filter(|u| !u.is_empty()) else { return Ok(0) };
    let allow_loopback = state.config.chat_webhook_allow_loopback;
    let client = crate::backend::reconciliation::ssrf::shared_client(allow_loopback)
        .map_err(|e| crate::backend::auth::internal("chat client", e))?;
    let mut sent = 0;
    for _ in 0..50 {
        let now = state.clock.now();
        let mut tx = state.db.begin_write().await?;
        let claimed = db::notifications::claim_chat(&mut tx, now, now + chrono::Duration::seconds(60)).await?;
        tx.commit().await?;
        let Some(message) = claimed else { break };
        let target = reqwest::Url::parse(&url).ok().filter(|u| crate::backend::reconciliation::ssrf::check_url(u, allow_loopback).is_ok());
        let delivered = match target {
            Some(target) => client
                .post(target)
                .timeout(std::time::Duration::from_secs(10))
                .json(&serde_json::json!({"text": message.text}))
                .send()
                .await
                .is_ok_and(|answer| answer.status().is_success()),
            None => false,
        };
        let attempts = message.attempts + 1;
        let wait = crate::domain::dispatch::next_delay(attempts, None, 0.5);
        let (status, next) = match (delivered, wait) {
            (true, _) => ("sent", now),
            (false, Some(wait)) => ("pending", now + wait),
            (false, None) => ("failed", now),
        };
        let mut tx = state.db.begin_write().await?;
        db::notifications::settle_chat(&mut tx, message.id, status, attempts, next).await?;
        tx.commit().await?;
        if delivered {
            sent += 1;
        } else {
            tracing::warn!(message = message.id, attempts, "chat message not delivered");
        }
    }
    Ok(sent)
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
