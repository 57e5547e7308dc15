//! Links between people and their chat accounts. A person links their own, from their account page, by signing
//! in to the chat (its OpenID Connect) after a recent sign-in here; a link ends when they end it or are disabled.
//! Every link and its end is audited.
use super::super::Caller;
use super::super::audit::record;
use crate::{AppState, db};
use chrono::{DateTime, Utc};
use contract::AppError;
use contract::chat::{ChatLinkView, ChatLinks};
use domain::audit::{Actor, AuditEntry, ObjectType};
use domain::audit_action::AuditAction;
use domain::chat::{ChatPlatform, ChatUser};
use domain::conflict::Conflict;
use domain::roles::Role;
use serde_json::json;

/// Links the caller to `who`, whom the chat's sign-in just vouched for; an earlier link of theirs on the same
/// chat ends. Needs a recent sign-in here.
pub async fn link(state: &AppState, caller: &Caller, who: &ChatUser) -> Result<(), AppError> {
    let authenticated = caller.fresh_sign_in(state)?;
    let now = state.clock.now();
    let mut tx = state.db.begin_write().await?;
    let ended = db::chat::end(&mut tx, caller.user_id(), Some(who.platform), now).await?;
    if !db::chat::insert(&mut tx, caller.user_id(), who, now).await? {
        return Err(AppError::conflict(Conflict::ChatAccountTaken, "this chat account is linked to another user"));
    }
    let before =
        ended.first().map(|l| json!({"platform": l.platform, "team_id": l.team_id, "chat_user_id": l.chat_user_id}));
    let mut entry = AuditEntry::new(caller.actor(), AuditAction::UserChatLinked, ObjectType::User, caller.user_id())
        .after(json!({"platform": who.platform, "team_id": who.team_id, "chat_user_id": who.user_id}))
        .authenticated(authenticated);
    if let Some(before) = before {
        entry = entry.before(before);
    }
    record(&mut tx, entry, caller.request_id.as_deref(), now).await?;
    tx.commit().await?;
    Ok(())
}

/// The company sign-in vouched for the person's Microsoft Entra ID object (`tid`, `oid`), which Teams names them
/// by: where a Teams bot is set up, that is their Teams account, linked (or moved) in the sign-in's transaction.
pub async fn link_company_account(
    tx: &mut db::Conn,
    state: &AppState,
    user_id: i64,
    (tenant, object_id): (&str, &str),
    (request_id, now): (Option<&str>, DateTime<Utc>),
) -> Result<(), AppError> {
    if state.teams.is_none() {
        return Ok(());
    }
    let who = ChatUser { platform: ChatPlatform::Teams, team_id: tenant.into(), user_id: object_id.into() };
    let provider = Actor::system(domain::audit::SystemActor::IdentityProvider);
    if db::chat::user_of(tx, &who).await?.is_some_and(|(holder, _)| holder == user_id) {
        // Signing in with the company account confirms the link again (`[chat] link_days` start anew).
        db::chat::confirmed(tx, user_id, &who, now).await?;
        return Ok(());
    }
    // Whoever held this object before (an account renamed at the provider) no longer does.
    if let Some(holder) = db::chat::holder_of(tx, &who).await? {
        let ended = db::chat::end(tx, holder, Some(ChatPlatform::Teams), now).await?;
        audit_ended(tx, provider.clone(), holder, &ended, (request_id, now)).await?;
    }
    let ended = db::chat::end(tx, user_id, Some(ChatPlatform::Teams), now).await?;
    audit_ended(tx, provider.clone(), user_id, &ended, (request_id, now)).await?;
    if db::chat::insert(tx, user_id, &who, now).await? {
        let entry = AuditEntry::new(provider, AuditAction::UserChatLinked, ObjectType::User, user_id)
            .after(json!({"platform": who.platform, "team_id": who.team_id, "chat_user_id": who.user_id}));
        record(tx, entry, request_id, now).await?;
    }
    Ok(())
}

/// The caller ends their link on a chat.
pub async fn unlink(state: &AppState, caller: &Caller, platform: ChatPlatform) -> Result<(), AppError> {
    let now = state.clock.now();
    let mut tx = state.db.begin_write().await?;
    let ended = db::chat::end(&mut tx, caller.user_id(), Some(platform), now).await?;
    audit_ended(&mut tx, caller.actor(), caller.user_id(), &ended, (caller.request_id.as_deref(), now)).await?;
    tx.commit().await?;
    Ok(())
}

/// A link past `[chat] link_days` ends when it is next pressed with (audited); its person links again, after a
/// fresh sign-in.
pub(super) async fn end_lapsed(state: &AppState, user_id: i64, platform: ChatPlatform) -> Result<(), AppError> {
    let now = state.clock.now();
    let mut tx = state.db.begin_write().await?;
    let ended = db::chat::end(&mut tx, user_id, Some(platform), now).await?;
    let housekeeping = Actor::system(domain::audit::SystemActor::Housekeeping);
    audit_ended(&mut tx, housekeeping, user_id, &ended, (None, now)).await?;
    tx.commit().await?;
    Ok(())
}

/// Ends every link of a user whose access ended (disabled, password changed, no role left, refused at the
/// company sign-in), in the transaction that ends it.
pub async fn end_links(
    tx: &mut db::Conn,
    actor: Actor,
    user_id: i64,
    (request_id, now): (Option<&str>, DateTime<Utc>),
) -> Result<(), AppError> {
    let ended = db::chat::end(tx, user_id, None, now).await?;
    audit_ended(tx, actor, user_id, &ended, (request_id, now)).await
}

async fn audit_ended(
    tx: &mut db::Conn,
    actor: Actor,
    user_id: i64,
    ended: &[db::chat::LinkRow],
    (request_id, now): (Option<&str>, DateTime<Utc>),
) -> Result<(), AppError> {
    for link in ended {
        let entry = AuditEntry::new(actor.clone(), AuditAction::UserChatUnlinked, ObjectType::User, user_id)
            .before(json!({"platform": link.platform, "team_id": link.team_id, "chat_user_id": link.chat_user_id}));
        record(tx, entry, request_id, now).await?;
    }
    Ok(())
}

/// The caller's own links, and whether a chat is set up here.
pub async fn links_of(state: &AppState, caller: &Caller) -> Result<ChatLinks, AppError> {
    let mut tx = state.db.begin_read().await?;
    let links = db::chat::of_user(&mut tx, caller.user_id()).await?;
    Ok(ChatLinks {
        slack_offered: state.slack.is_some(),
        teams_offered: state.teams.is_some(),
        links: links.into_iter().map(|l| view(state, l)).collect(),
    })
}

/// Every link in force, for the admins.
pub async fn all_links(state: &AppState, caller: &Caller) -> Result<Vec<ChatLinkView>, AppError> {
    caller.require(Role::Admin)?;
    let mut tx = state.db.begin_read().await?;
    Ok(db::chat::all(&mut tx).await?.into_iter().map(|l| view(state, l)).collect())
}

fn view(state: &AppState, row: db::chat::LinkRow) -> ChatLinkView {
    ChatLinkView {
        lapses_at: domain::chat::link_lapses_at(row.linked_at, state.config.chat_link_days),
        username: row.username,
        display_name: row.display_name,
        platform: row.platform,
        team_id: row.team_id,
        chat_user_id: row.chat_user_id,
        linked_at: row.linked_at,
    }
}
