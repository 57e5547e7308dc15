//! In-app notifications.
use super::{Conn, RowLock, on_conn};
use chrono::{DateTime, Utc};

#[derive(Clone, Debug, sqlx::FromRow, serde::Serialize)]
pub struct NotificationRow {
    pub id: i64,
    pub kind: String,
    pub title: String,
    pub link: String,
    pub created_at: DateTime<Utc>,
    pub read_at: Option<DateTime<Utc>>,
}

pub async fn insert(
    tx: &mut Conn,
    user_id: i64,
    kind: &str,
    title: &str,
    link: &str,
    now: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    on_conn!(tx, |c| sqlx::query(
        "INSERT INTO notifications (user_id, kind, title, link, created_at) VALUES ($1, $2, $3, $4, $5)"
    )
    .bind(user_id)
    .bind(kind)
    .bind(title)
    .bind(link)
    .bind(now)
    .execute(c)
    .await
    .map(drop))
}

/// The active managers who own a department.
pub async fn owners_of(tx: &mut Conn, department: &str) -> Result<Vec<i64>, sqlx::Error> {
    on_conn!(tx, |c| sqlx::query_scalar(
        "SELECT u.id FROM users u
         JOIN user_roles r ON r.user_id = u.id AND r.role = 'manager'
         JOIN user_departments ud ON ud.user_id = u.id
         JOIN departments d ON d.id = ud.department_id
         WHERE d.code = $1 AND u.disabled_at IS NULL ORDER BY u.id"
    )
    .bind(department)
    .fetch_all(c)
    .await)
}

/// Everyone's notifications that link to `link` (the evidence bundle).
pub async fn with_link(tx: &mut Conn, link: &str) -> Result<Vec<NotificationRow>, sqlx::Error> {
    on_conn!(tx, |c| sqlx::query_as(
        "SELECT id, kind, title, link, created_at, read_at FROM notifications WHERE link = $1 ORDER BY id"
    )
    .bind(link)
    .fetch_all(c)
    .await)
}

pub async fn unread_count(tx: &mut Conn, user_id: i64) -> Result<i64, sqlx::Error> {
    on_conn!(tx, |c| sqlx::query_scalar("SELECT COUNT(*) FROM notifications WHERE user_id = $1 AND read_at IS NULL")
        .bind(user_id)
        .fetch_one(c)
        .await)
}

pub async fn latest(tx: &mut Conn, user_id: i64, limit: i64) -> Result<Vec<NotificationRow>, sqlx::Error> {
    on_conn!(tx, |c| {
        sqlx::query_as(
        "SELECT id, kind, title, link, created_at, read_at FROM notifications WHERE user_id = $1 ORDER BY id DESC LIMIT $2"
    )
    .bind(user_id)
    .bind(limit)
    .fetch_all(c)
    .await
    })
}

pub async fn mark_all_read(tx: &mut Conn, user_id: i64, now: DateTime<Utc>) -> Result<(), sqlx::Error> {
    on_conn!(tx, |c| sqlx::query("UPDATE notifications SET read_at = $2 WHERE user_id = $1 AND read_at IS NULL")
        .bind(user_id)
        .bind(now)
        .execute(c)
        .await
        .map(drop))
}

/// The user's e-mail address, if they gave one and are active.
pub async fn email_of(tx: &mut Conn, user_id: i64) -> Result<Option<String>, sqlx::Error> {
    on_conn!(tx, |c| sqlx::query_scalar("SELECT email FROM users WHERE id = $1 AND disabled_at IS NULL")
        .bind(user_id)
        .fetch_optional(c)
        .await)
    .map(Option::flatten)
}

/// A message for the team's chat, sent after the commit.
pub async fn queue_chat(tx: &mut Conn, text: &str, now: DateTime<Utc>) -> Result<(), sqlx::Error> {
    queue(tx, "chat", None, None, text, now).await
}

/// An e-mail to one person, sent after the commit.
pub async fn queue_mail(
    tx: &mut Conn,
    recipient: &str,
    subject: &str,
    text: &str,
    now: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    queue(tx, "mail", Some(recipient), Some(subject), text, now).await
}

async fn queue(
    tx: &mut Conn,
    channel: &str,
    recipient: Option<&str>,
    subject: Option<&str>,
    text: &str,
    now: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    on_conn!(tx, |c| sqlx::query(
        "INSERT INTO outbound_messages (channel, recipient, subject, text, status, next_attempt_at, created_at)
         VALUES ($1, $2, $3, $4, 'pending', $5, $5)"
    )
    .bind(channel)
    .bind(recipient)
    .bind(subject)
    .bind(text)
    .bind(now)
    .execute(c)
    .await
    .map(drop))
}

/// A chat message or an e-mail waiting in the outbox.
#[derive(Clone, Debug, sqlx::FromRow)]
pub struct OutboundRow {
    pub id: i64,
    pub channel: String,
    pub recipient: Option<String>,
    pub subject: Option<String>,
    pub text: String,
    pub attempts: i64,
}

/// Claims the oldest due message (PostgreSQL skips rows another instance holds).
pub async fn claim_outbound(
    tx: &mut Conn,
    now: DateTime<Utc>,
    lease_until: DateTime<Utc>,
) -> Result<Option<OutboundRow>, sqlx::Error> {
    let pick = "SELECT id FROM outbound_messages WHERE status = 'pending' AND next_attempt_at <= $1
                AND (lease_until IS NULL OR lease_until < $1) ORDER BY id LIMIT 1";
    let returning = "RETURNING id, channel, recipient, subject, text, attempts";
    let lock = tx.lock_clause(RowLock::SkipLocked);
    let sql = format!("UPDATE outbound_messages SET lease_until = $2 WHERE id = ({pick}{lock}) {returning}");
    on_conn!(tx, |c| sqlx::query_as(&sql).bind(now).bind(lease_until).fetch_optional(c).await)
}

pub async fn settle_outbound(
    tx: &mut Conn,
    id: i64,
    status: crate::domain::dispatch::DeliveryStatus,
    attempts: i64,
    next: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    on_conn!(tx, |c| {
        sqlx::query(
        "UPDATE outbound_messages SET status = $2, attempts = $3, next_attempt_at = $4, lease_until = NULL WHERE id = $1"
    )
    .bind(id)
    .bind(status)
    .bind(attempts)
    .bind(next)
    .execute(c)
    .await
    .map(drop)
    })
}

/// Deletes sent or given-up messages created before `before`; returns how many.
pub async fn purge_outbound(tx: &mut Conn, before: DateTime<Utc>) -> Result<u64, sqlx::Error> {
    on_conn!(tx, |c| sqlx::query(
        "DELETE FROM outbound_messages WHERE status IN ('sent', 'failed') AND created_at < $1"
    )
    .bind(before)
    .execute(c)
    .await
    .map(|r| r.rows_affected()))
}
