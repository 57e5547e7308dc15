//! Decisions in chat: the links between chat users and users, the messages posted about rerun requests and bulk
//! reruns, and the signed interactions already received.
use super::{Conn, RowLock, changed_one, on_conn};
use chrono::{DateTime, Utc};
use domain::chat::{ChatPlatform, ChatSubject, ChatUser};

/// A link between a user and their account in a chat workspace.
#[derive(Clone, Debug, sqlx::FromRow)]
pub struct LinkRow {
    pub user_id: i64,
    pub username: String,
    pub display_name: String,
    pub platform: String,
    pub team_id: String,
    pub chat_user_id: String,
    pub linked_at: DateTime<Utc>,
}

const LINK_COLUMNS: &str = "l.user_id, u.username, u.display_name, l.platform, l.team_id, l.chat_user_id, l.linked_at";

/// The enabled user a chat user linked to, if any, and when the link was made.
pub async fn user_of(tx: &mut Conn, who: &ChatUser) -> Result<Option<(i64, DateTime<Utc>)>, sqlx::Error> {
    on_conn!(tx, |c| sqlx::query_as(
        "SELECT l.user_id, l.linked_at FROM chat_links l JOIN users u ON u.id = l.user_id
         WHERE l.platform = $1 AND l.team_id = $2 AND l.chat_user_id = $3 AND l.ended_at IS NULL
           AND u.disabled_at IS NULL"
    )
    .bind(who.platform.as_str())
    .bind(&who.team_id)
    .bind(&who.user_id)
    .fetch_optional(c)
    .await)
}

/// The person confirmed their link again (a company sign-in): it stands `[chat] link_days` from now.
pub async fn confirmed(tx: &mut Conn, user_id: i64, who: &ChatUser, now: DateTime<Utc>) -> Result<(), sqlx::Error> {
    on_conn!(tx, |c| sqlx::query(
        "UPDATE chat_links SET linked_at = $5
         WHERE user_id = $1 AND platform = $2 AND team_id = $3 AND chat_user_id = $4 AND ended_at IS NULL"
    )
    .bind(user_id)
    .bind(who.platform.as_str())
    .bind(&who.team_id)
    .bind(&who.user_id)
    .bind(now)
    .execute(c)
    .await
    .map(drop))
}

/// The user (enabled or not) a chat user is linked to, if any.
pub async fn holder_of(tx: &mut Conn, who: &ChatUser) -> Result<Option<i64>, sqlx::Error> {
    on_conn!(tx, |c| sqlx::query_scalar(
        "SELECT user_id FROM chat_links
         WHERE platform = $1 AND team_id = $2 AND chat_user_id = $3 AND ended_at IS NULL"
    )
    .bind(who.platform.as_str())
    .bind(&who.team_id)
    .bind(&who.user_id)
    .fetch_optional(c)
    .await)
}

/// A link, or `false` when the chat user is linked to someone already (the person's own earlier link on the
/// platform has ended first: see `end`).
pub async fn insert(tx: &mut Conn, user_id: i64, who: &ChatUser, now: DateTime<Utc>) -> Result<bool, sqlx::Error> {
    changed_one!(tx, |c| sqlx::query(
        "INSERT INTO chat_links (user_id, platform, team_id, chat_user_id, linked_at) VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT DO NOTHING"
    )
    .bind(user_id)
    .bind(who.platform.as_str())
    .bind(&who.team_id)
    .bind(&who.user_id)
    .bind(now)
    .execute(c)
    .await)
}

/// Ends a user's links (on one platform, or all of them); returns the links that ended.
pub async fn end(
    tx: &mut Conn,
    user_id: i64,
    platform: Option<ChatPlatform>,
    now: DateTime<Utc>,
) -> Result<Vec<LinkRow>, sqlx::Error> {
    let ended = of_user(tx, user_id).await?;
    let ended: Vec<LinkRow> = ended.into_iter().filter(|l| platform.is_none_or(|p| p.as_str() == l.platform)).collect();
    for link in &ended {
        on_conn!(tx, |c| sqlx::query(
            "UPDATE chat_links SET ended_at = $3 WHERE user_id = $1 AND platform = $2 AND ended_at IS NULL"
        )
        .bind(user_id)
        .bind(&link.platform)
        .bind(now)
        .execute(c)
        .await
        .map(drop))?;
    }
    Ok(ended)
}

/// A user's links in force.
pub async fn of_user(tx: &mut Conn, user_id: i64) -> Result<Vec<LinkRow>, sqlx::Error> {
    let sql = format!(
        "SELECT {LINK_COLUMNS} FROM chat_links l JOIN users u ON u.id = l.user_id
         WHERE l.user_id = $1 AND l.ended_at IS NULL ORDER BY l.platform"
    );
    on_conn!(tx, |c| sqlx::query_as(&sql).bind(user_id).fetch_all(c).await)
}

/// Every link in force (the admin page lists them).
pub async fn all(tx: &mut Conn) -> Result<Vec<LinkRow>, sqlx::Error> {
    let sql = format!(
        "SELECT {LINK_COLUMNS} FROM chat_links l JOIN users u ON u.id = l.user_id
         WHERE l.ended_at IS NULL ORDER BY u.username, l.platform"
    );
    on_conn!(tx, |c| sqlx::query_as(&sql).fetch_all(c).await)
}

/// The chat IDs of those `users` who linked an account on `platform` (direct messages go to them).
pub async fn chat_ids_of(tx: &mut Conn, users: &[i64], platform: ChatPlatform) -> Result<Vec<String>, sqlx::Error> {
    let mut ids = Vec::new();
    for &user in users {
        let found: Option<String> = on_conn!(tx, |c| sqlx::query_scalar(
            "SELECT chat_user_id FROM chat_links WHERE user_id = $1 AND platform = $2 AND ended_at IS NULL"
        )
        .bind(user)
        .bind(platform.as_str())
        .fetch_optional(c)
        .await)?;
        ids.extend(found);
    }
    Ok(ids)
}

/// The two columns that name a message's subject.
fn columns(subject: &ChatSubject) -> (Option<&str>, Option<&str>) {
    match subject {
        ChatSubject::Request(id) => (Some(id), None),
        ChatSubject::Batch(id) => (None, Some(id)),
    }
}

/// A message to post about a request or a bulk rerun, to a channel or (a chat user's ID) a person.
pub async fn add_post(
    tx: &mut Conn,
    platform: ChatPlatform,
    subject: &ChatSubject,
    destination: &str,
    now: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    let (request, batch) = columns(subject);
    on_conn!(tx, |c| sqlx::query(
        "INSERT INTO chat_posts (platform, request_id, batch_id, destination, next_attempt_at, created_at)
         VALUES ($1, $2, $3, $4, $5, $5)"
    )
    .bind(platform.as_str())
    .bind(request)
    .bind(batch)
    .bind(destination)
    .bind(now)
    .execute(c)
    .await
    .map(drop))
}

/// The subject changed: every message about it is to show it as it is now.
pub async fn changed(tx: &mut Conn, subject: &ChatSubject, now: DateTime<Utc>) -> Result<(), sqlx::Error> {
    let column = match subject {
        ChatSubject::Request(_) => "request_id",
        ChatSubject::Batch(_) => "batch_id",
    };
    let sql = format!(
        "UPDATE chat_posts SET wanted = wanted + 1, attempts = 0, next_attempt_at = $2
         WHERE {column} = $1 AND failed_at IS NULL"
    );
    on_conn!(tx, |c| sqlx::query(&sql).bind(subject.id()).bind(now).execute(c).await.map(drop))
}

/// A message that does not show its subject as it is now.
#[derive(Clone, Debug, sqlx::FromRow)]
pub struct PostRow {
    pub id: i64,
    pub platform: String,
    request_id: Option<String>,
    batch_id: Option<String>,
    pub destination: String,
    pub channel: Option<String>,
    pub message_ts: Option<String>,
    pub wanted: i64,
    pub attempts: i64,
}

impl PostRow {
    pub fn subject(&self) -> ChatSubject {
        match (&self.request_id, &self.batch_id) {
            (Some(id), _) => ChatSubject::Request(id.clone()),
            (None, batch) => ChatSubject::Batch(batch.clone().unwrap_or_default()),
        }
    }
}

/// Claims the oldest message due (PostgreSQL skips rows another instance holds).
pub async fn claim_post(
    tx: &mut Conn,
    now: DateTime<Utc>,
    lease_until: DateTime<Utc>,
) -> Result<Option<PostRow>, sqlx::Error> {
    let pick = "SELECT id FROM chat_posts WHERE shown < wanted AND failed_at IS NULL AND next_attempt_at <= $1
                AND (lease_until IS NULL OR lease_until < $1) ORDER BY id LIMIT 1";
    let lock = tx.lock_clause(RowLock::SkipLocked);
    let sql = format!(
        "UPDATE chat_posts SET lease_until = $2 WHERE id = ({pick}{lock})
         RETURNING id, platform, request_id, batch_id, destination, channel, message_ts, wanted, attempts"
    );
    on_conn!(tx, |c| sqlx::query_as(&sql).bind(now).bind(lease_until).fetch_optional(c).await)
}

/// What happened to one attempt at a message.
pub enum PostOutcome<'a> {
    /// Posted or updated: it shows change `shown`; where it is (`channel`, `ts`).
    Shown { shown: i64, channel: &'a str, ts: &'a str },
    /// To be tried again at `next`.
    Later { attempts: i64, next: DateTime<Utc>, error: &'a str },
    /// Given up.
    Failed { attempts: i64, error: &'a str },
}

pub async fn settle_post(
    tx: &mut Conn,
    id: i64,
    outcome: PostOutcome<'_>,
    now: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    match outcome {
        PostOutcome::Shown { shown, channel, ts } => on_conn!(tx, |c| sqlx::query(
            "UPDATE chat_posts SET shown = $2, channel = $3, message_ts = $4, lease_until = NULL, last_error = NULL
             WHERE id = $1"
        )
        .bind(id)
        .bind(shown)
        .bind(channel)
        .bind(ts)
        .execute(c)
        .await
        .map(drop)),
        PostOutcome::Later { attempts, next, error } => on_conn!(tx, |c| sqlx::query(
            "UPDATE chat_posts SET attempts = $2, next_attempt_at = $3, lease_until = NULL, last_error = $4
             WHERE id = $1"
        )
        .bind(id)
        .bind(attempts)
        .bind(next)
        .bind(error)
        .execute(c)
        .await
        .map(drop)),
        PostOutcome::Failed { attempts, error } => on_conn!(tx, |c| sqlx::query(
            "UPDATE chat_posts SET attempts = $2, failed_at = $3, lease_until = NULL, last_error = $4 WHERE id = $1"
        )
        .bind(id)
        .bind(attempts)
        .bind(now)
        .bind(error)
        .execute(c)
        .await
        .map(drop)),
    }
}

/// `true` the first time an interaction (`key`: what identifies it) is received; it is remembered until
/// `forget_after`. Rows from before that column are forgotten when received before `old_rule_before`.
pub async fn first_time(
    tx: &mut Conn,
    key: &str,
    now: DateTime<Utc>,
    forget_after: DateTime<Utc>,
    old_rule_before: DateTime<Utc>,
) -> Result<bool, sqlx::Error> {
    on_conn!(tx, |c| sqlx::query(
        "DELETE FROM chat_interactions
          WHERE forget_after < $1 OR (forget_after IS NULL AND received_at < $2)"
    )
    .bind(now)
    .bind(old_rule_before)
    .execute(c)
    .await
    .map(drop))?;
    changed_one!(tx, |c| sqlx::query(
        "INSERT INTO chat_interactions (signature, received_at, forget_after) VALUES ($1, $2, $3)
         ON CONFLICT DO NOTHING"
    )
    .bind(key)
    .bind(now)
    .bind(forget_after)
    .execute(c)
    .await)
}
