//! In-app notifications.
use super::states::Stored;
use super::{Conn, RowLock, on_conn};
use chrono::{DateTime, Utc};
use domain::roles::Role;

#[derive(Clone, Debug, sqlx::FromRow, serde::Serialize)]
pub struct NotificationRow {
    pub id: i64,
    pub kind: String,
    pub title: String,
    pub link: String,
    pub created_at: DateTime<Utc>,
    pub read_at: Option<DateTime<Utc>>,
    /// What it tells, as facts (JSON, `domain::notifications::Notice`); none on rows older than notices, whose
    /// `title` is the text they were written with.
    pub notice: Option<String>,
}

/// A notification for one user; its title is put into words when read.
pub async fn insert(
    tx: &mut Conn,
    user_id: i64,
    kind: &str,
    notice: &str,
    link: &str,
    now: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    on_conn!(tx, |c| sqlx::query(
        "INSERT INTO notifications (user_id, kind, title, notice, link, created_at) VALUES ($1, $2, '', $3, $4, $5)"
    )
    .bind(user_id)
    .bind(kind)
    .bind(notice)
    .bind(link)
    .bind(now)
    .execute(c)
    .await
    .map(drop))
}

/// The active managers who own a department: a manager's membership of it.
pub async fn owners_of(tx: &mut Conn, department: &str) -> Result<Vec<i64>, sqlx::Error> {
    on_conn!(tx, |c| sqlx::query_scalar(
        "SELECT u.id FROM users u
         JOIN user_memberships m ON m.user_id = u.id AND m.role = 'manager'
         JOIN departments d ON d.id = m.department_id
         WHERE d.code = $1 AND u.disabled_at IS NULL ORDER BY u.id"
    )
    .bind(department)
    .fetch_all(c)
    .await)
}

/// The enabled users who hold one of the organisation's `roles` (auditor, admin).
pub async fn holding(tx: &mut Conn, roles: &[Role]) -> Result<Vec<i64>, sqlx::Error> {
    // The roles' names are the domain's own words, never a caller's text.
    let names: Vec<String> = roles.iter().map(|r| format!("'{}'", r.as_str())).collect();
    let sql = format!(
        "SELECT DISTINCT u.id FROM users u JOIN user_roles r ON r.user_id = u.id
         WHERE r.role IN ({}) AND u.disabled_at IS NULL ORDER BY u.id",
        names.join(", ")
    );
    on_conn!(tx, |c| sqlx::query_scalar(&sql).fetch_all(c).await)
}

/// Everyone's notifications that link to `link` (the evidence bundle).
pub async fn with_link(tx: &mut Conn, link: &str) -> Result<Vec<NotificationRow>, sqlx::Error> {
    on_conn!(tx, |c| sqlx::query_as(
        "SELECT id, kind, title, link, created_at, read_at, notice FROM notifications WHERE link = $1 ORDER BY id"
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
            "SELECT id, kind, title, link, created_at, read_at, notice FROM notifications
         WHERE user_id = $1 ORDER BY id DESC LIMIT $2",
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

/// What an outbound message tells, to whom: put into words when it is sent.
pub struct Outbound<'a> {
    pub notice: &'a str,
    pub department: &'a str,
    pub link: &'a str,
}

/// A message for the team's chat, sent after the commit.
pub async fn queue_chat(tx: &mut Conn, message: &Outbound<'_>, now: DateTime<Utc>) -> Result<(), sqlx::Error> {
    queue(tx, "chat", None, message, now).await
}

/// An e-mail to one user at their address, sent after the commit.
pub async fn queue_mail(
    tx: &mut Conn,
    to: (i64, &str),
    message: &Outbound<'_>,
    now: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    queue(tx, "mail", Some(to), message, now).await
}

async fn queue(
    tx: &mut Conn,
    channel: &str,
    to: Option<(i64, &str)>,
    message: &Outbound<'_>,
    now: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    on_conn!(tx, |c| sqlx::query(
        "INSERT INTO outbound_messages
           (channel, user_id, recipient, text, notice, department, link, status, next_attempt_at, created_at)
         VALUES ($1, $2, $3, '', $4, $5, $6, 'pending', $7, $7)"
    )
    .bind(channel)
    .bind(to.map(|(user, _)| user))
    .bind(to.map(|(_, address)| address))
    .bind(message.notice)
    .bind(message.department)
    .bind(message.link)
    .bind(now)
    .execute(c)
    .await
    .map(drop))
}

/// A chat message or an e-mail waiting in the outbox: a notice to put into words, or (rows from before
/// notices) the text and subject it was written with.
#[derive(Clone, Debug, sqlx::FromRow)]
pub struct OutboundRow {
    pub id: i64,
    pub channel: String,
    pub recipient: Option<String>,
    pub subject: Option<String>,
    pub text: String,
    pub attempts: i64,
    pub notice: Option<String>,
    pub department: Option<String>,
    pub link: Option<String>,
    pub created_at: DateTime<Utc>,
    /// The recipient's language and time zone (e-mails).
    pub language: Option<String>,
    pub time_zone: Option<String>,
}

/// Claims the oldest due message (PostgreSQL skips rows another instance holds).
pub async fn claim_outbound(
    tx: &mut Conn,
    now: DateTime<Utc>,
    lease_until: DateTime<Utc>,
) -> Result<Option<OutboundRow>, sqlx::Error> {
    let pick = "SELECT id FROM outbound_messages WHERE status = 'pending' AND next_attempt_at <= $1
                AND (lease_until IS NULL OR lease_until < $1) ORDER BY id LIMIT 1";
    let returning = "RETURNING id, channel, recipient, subject, text, attempts, notice, department, link, created_at,
        (SELECT language FROM users WHERE id = user_id) AS language,
        (SELECT time_zone FROM users WHERE id = user_id) AS time_zone";
    let lock = tx.lock_clause(RowLock::SkipLocked);
    let sql = format!("UPDATE outbound_messages SET lease_until = $2 WHERE id = ({pick}{lock}) {returning}");
    on_conn!(tx, |c| sqlx::query_as(&sql).bind(now).bind(lease_until).fetch_optional(c).await)
}

/// Records an attempt's outcome and the text as it was sent (the subject too, for an e-mail).
pub async fn settle_outbound(
    tx: &mut Conn,
    id: i64,
    (status, attempts, next): (domain::dispatch::DeliveryStatus, i64, DateTime<Utc>),
    (subject, text): (Option<&str>, &str),
) -> Result<(), sqlx::Error> {
    on_conn!(tx, |c| {
        sqlx::query(
            "UPDATE outbound_messages SET status = $2, attempts = $3, next_attempt_at = $4, lease_until = NULL,
               subject = $5, text = $6 WHERE id = $1",
        )
        .bind(id)
        .bind(Stored(status))
        .bind(attempts)
        .bind(next)
        .bind(subject)
        .bind(text)
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
