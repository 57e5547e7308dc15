//! Notifications about rerun requests: to the owners when their approval is asked or a rerun failed, to the
//! requester at every decision and at the end. In-app, written in the transaction of the change; to the team's
//! chat and by e-mail when configured, through an outbox sent after the commit.
use super::Caller;
use crate::mail::{Mailer, NotSent};
use crate::reconciliation::ssrf;
use crate::{AppState, db};
use chrono::{DateTime, Utc};
use contract::AppError;
use contract::notifications::NotificationView;
use domain::audit::ObjectType;
use domain::audit_action::AuditAction;
use domain::dispatch::DeliveryStatus;
use domain::notifications::{Notice, RerunNews};
use domain::preferences::time_zone_or_default;
use domain::roles::Role;
use words::notifications::{self, Occasion};

/// Who hears of a request's new state.
pub enum Audience {
    Owners,
    Requester,
    Both,
}

/// Notifies the audience of `request` (its ID, requester, department) in the caller's transaction; and the
/// team's chat, when one is configured (sent after the commit, from an outbox).
pub async fn notify(
    tx: &mut db::Conn,
    state: &AppState,
    request: &db::rerun_requests::RequestRow,
    news: RerunNews,
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
    super::chat::request_news(tx, state, request, news, now).await?;
    let notice = Notice::rerun(&request.process_id, news);
    let link = format!("/reruns/{}", request.id);
    send(tx, state, &users, (&request.department, news.kind()), &notice, &link, now).await
}

/// Tells a department's owners (its managers), e.g. that an indicator crossed its threshold.
pub async fn notify_owners(
    tx: &mut db::Conn,
    state: &AppState,
    (department, kind): (&str, &str),
    notice: &Notice,
    link: &str,
    now: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    let owners = db::notifications::owners_of(tx, department).await?;
    send(tx, state, &owners, (department, kind), notice, link, now).await
}

/// Tells whoever holds one of the organisation's `roles` (auditors, admins), e.g. of the audit signer's alarm:
/// the audit trail's notices belong to no department.
pub async fn notify_holders(
    tx: &mut db::Conn,
    state: &AppState,
    (roles, kind): (&[Role], &str),
    notice: &Notice,
    link: &str,
    now: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    let users = db::notifications::holding(tx, roles).await?;
    send(tx, state, &users, ("", kind), notice, link, now).await
}

/// Tells one user (e.g. whoever asked for a bulk rerun) about it.
pub async fn notify_user(
    tx: &mut db::Conn,
    state: &AppState,
    user: i64,
    (department, kind): (&str, &str),
    notice: &Notice,
    link: &str,
    now: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    send(tx, state, &[user], (department, kind), notice, link, now).await
}

/// In the app for each user, by e-mail where configured, and once to the team's chat: each stores the notice,
/// put into words when read or sent.
async fn send(
    tx: &mut db::Conn,
    state: &AppState,
    users: &[i64],
    (department, kind): (&str, &str),
    notice: &Notice,
    link: &str,
    now: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    let stored = notice.to_stored();
    let message = db::notifications::Outbound { notice: &stored, department, link };
    for &user in users {
        db::notifications::insert(tx, user, kind, &stored, link, now).await?;
        if state.config.mail.is_some()
            && let Some(address) = db::notifications::email_of(tx, user).await?
        {
            db::notifications::queue_mail(tx, (user, &address), &message, now).await?;
        }
    }
    if state.config.chat_webhook_url_env.is_some() {
        db::notifications::queue_chat(tx, &message, now).await?;
    }
    Ok(())
}

/// An outbound message in its reader's words: an e-mail in its recipient's language and time zone, a chat
/// message in its department's chat language. Rows from before notices go out as they were written.
fn words_of(state: &AppState, message: &db::notifications::OutboundRow) -> Words {
    let notice = message.notice.as_deref().and_then(Notice::from_stored);
    let Some(notice) = notice else {
        return Words { subject: message.subject.clone(), text: message.text.clone(), html: None };
    };
    let department = message.department.as_deref().unwrap_or_default();
    let url = format!("{}{}", state.server.public_url, message.link.as_deref().unwrap_or_default());
    let occasion = Occasion { department, at: message.created_at, url: &url };
    if message.channel == "mail" {
        let locale = message.language.as_deref().and_then(|l| l.parse().ok()).unwrap_or_default();
        let zone = time_zone_or_default(message.time_zone.as_deref().unwrap_or_default());
        let mail = notifications::mail_in(locale, zone, &notice, &occasion);
        Words { subject: Some(mail.subject), text: mail.text, html: Some(mail.html) }
    } else {
        let locale = state.config.department(department).and_then(|d| d.chat_language.parse().ok()).unwrap_or_default();
        Words { subject: None, text: notifications::chat_in(locale, &notice, &occasion), html: None }
    }
}

struct Words {
    subject: Option<String>,
    text: String,
    html: Option<String>,
}

/// Sends due outbound messages: chat (a Slack-compatible `{"text": …}` POST) and e-mail (SMTP); returns how
/// many went out. A failure is tried again with backoff; a permanent one (SMTP 5xx) ends at once.
pub async fn send_outbound(state: &AppState) -> Result<usize, AppError> {
    let mut mailer: Option<Result<Mailer, NotSent>> = None; // built at the first e-mail of the round
    let mut sent = 0;
    for _ in 0..50 {
        let now = state.clock.now();
        let mut tx = state.db.begin_claim().await?;
        let claimed = db::notifications::claim_outbound(&mut tx, now, now + chrono::Duration::seconds(60)).await?;
        tx.commit().await?;
        let Some(message) = claimed else { break };
        let words = words_of(state, &message);
        let delivered = match message.channel.as_str() {
            "mail" => match &state.config.mail {
                Some(config) => match mailer.get_or_insert_with(|| Mailer::new(config)) {
                    Ok(mailer) => {
                        let to = message.recipient.as_deref().unwrap_or_default();
                        let subject = words.subject.as_deref().unwrap_or_default();
                        mailer.send(to, subject, &words.text, words.html.as_deref()).await
                    }
                    Err(e) => Err(NotSent { why: e.why.clone(), permanent: e.permanent }),
                },
                None => Err(NotSent { why: "e-mail is no longer configured".into(), permanent: true }),
            },
            _ => post_chat(state, &words.text).await,
        };
        let attempts = message.attempts + 1;
        let (status, next) = match &delivered {
            Ok(()) => (DeliveryStatus::Sent, now),
            Err(e) => match domain::dispatch::next_delay(attempts, None, 0.5).filter(|_| !e.permanent) {
                Some(wait) => (DeliveryStatus::Pending, now + wait),
                None => (DeliveryStatus::Failed, now),
            },
        };
        let mut tx = state.db.begin_write().await?;
        let sent_as = (words.subject.as_deref(), words.text.as_str());
        db::notifications::settle_outbound(&mut tx, message.id, (status, attempts, next), sent_as).await?;
        tx.commit().await?;
        match delivered {
            Ok(()) => sent += 1,
            Err(e) => tracing::warn!(
                message = message.id,
                channel = message.channel,
                attempts,
                status = status.as_str(),
                why = e.why,
                "message not delivered"
            ),
        }
    }
    Ok(sent)
}

async fn post_chat(state: &AppState, text: &str) -> Result<(), NotSent> {
    let not_sent = |why: &str| NotSent { why: why.to_string(), permanent: false };
    let var =
        state.config.chat_webhook_url_env.as_deref().ok_or_else(|| not_sent("the chat is no longer configured"))?;
    let url = std::env::var(var)
        .ok()
        .filter(|u| !u.is_empty())
        .ok_or_else(|| not_sent("the chat URL variable is not set"))?;
    let allow_loopback = state.config.chat_webhook_allow_loopback;
    let target = reqwest::Url::parse(&url).map_err(|_| not_sent("the chat URL is not a URL"))?;
    ssrf::check_url(&target, allow_loopback).map_err(|e| not_sent(&e))?;
    let client = ssrf::shared_client(allow_loopback).map_err(|e| not_sent(&e))?;
    let answer = client
        .post(target)
        .timeout(std::time::Duration::from_secs(10))
        .json(&serde_json::json!({"text": text}))
        .send()
        .await;
    match answer {
        Ok(answer) if answer.status().is_success() => Ok(()),
        Ok(answer) => Err(not_sent(&format!("HTTP {}", answer.status().as_u16()))),
        Err(e) => Err(not_sent(&crate::reconciliation::http_json::describe(&e))),
    }
}

/// Purges sent and given-up chat messages and e-mails past `message_retention_days` (audited); returns how many.
pub async fn purge_sent(state: &AppState) -> Result<u64, AppError> {
    let now = state.clock.now();
    let days = state.config.message_retention_days;
    let mut tx = state.db.begin_write().await?;
    let purged = db::notifications::purge_outbound(&mut tx, now - chrono::Duration::days(days as i64)).await?;
    if purged > 0 {
        let entry = domain::audit::AuditEntry::new(
            domain::audit::Actor::system(domain::audit::SystemActor::Housekeeping),
            AuditAction::OutboundMessagesPurged,
            ObjectType::OutboundMessage,
            "sent",
        )
        .after(serde_json::json!({"purged": purged, "older_than_days": days}));
        super::audit::record(&mut tx, entry, None, now).await?;
    }
    tx.commit().await?;
    Ok(purged)
}

pub async fn unread(state: &AppState, caller: &Caller) -> Result<i64, AppError> {
    let mut tx = state.db.connection().await?;
    Ok(db::notifications::unread_count(&mut tx, caller.user_id()).await?)
}

/// The caller's latest notifications, their titles in the caller's language.
pub async fn latest(state: &AppState, caller: &Caller) -> Result<Vec<NotificationView>, AppError> {
    let mut tx = state.db.begin_read().await?;
    let rows = db::notifications::latest(&mut tx, caller.user_id(), 50).await?;
    Ok(rows
        .into_iter()
        .map(|r| {
            let (title, entered) = match r.notice.as_deref().and_then(Notice::from_stored) {
                Some(notice) => notifications::notice_title_for_page(caller.locale, &notice),
                None => (r.title, Vec::new()),
            };
            NotificationView {
                id: r.id,
                kind: r.kind,
                title,
                entered,
                link: r.link,
                created_at: r.created_at,
                read: r.read_at.is_some(),
            }
        })
        .collect())
}

pub async fn mark_all_read(state: &AppState, caller: &Caller) -> Result<(), AppError> {
    let mut tx = state.db.begin_write().await?;
    db::notifications::mark_all_read(&mut tx, caller.user_id(), state.clock.now()).await?;
    tx.commit().await?;
    Ok(())
}
