//! Sign-in, sign-out, who am I, my password.
use crate::contract::{AppError, CurrentUser};
use leptos::prelude::*;
#[cfg(feature = "ssr")]
use {
    super::context,
    crate::backend::{auth, services},
    crate::domain::audit::{AuditEntry, ObjectType},
    crate::domain::audit_action::AuditAction,
    crate::domain::identity::{AuthMethod, Authentication},
};

#[server(endpoint = "sign_in")]
pub async fn sign_in(username: String, password: String) -> Result<CurrentUser, AppError> {
    let state = context::state()?;
    let mut session = context::session().await?;
    let attempt = services::sign_in::Attempt {
        username,
        password,
        ip: context::client_ip().await,
        request_id: context::request_id().await,
        device: context::cookie(crate::domain::throttle::DEVICE_COOKIE).await,
    };
    let signed_in = services::sign_in::check(&state, attempt).await?;
    let authenticated = Authentication { at: state.clock.now(), method: AuthMethod::Password };
    auth::start_session(&mut session, &signed_in.user, &state, &authenticated).await?;
    // This browser is now known for the account: strangers' guesses elsewhere do not keep it out.
    context::remember_device(&signed_in.device, !state.server.is_local_http());
    let user = signed_in.user.user;
    context::remember_preferences(&user.language, Some(&user.time_zone));
    Ok(user)
}

/// Ends the session; for a person who signed in through the company's identity provider, answers the
/// provider's end-session URL (when it offers one), where the browser goes next.
#[server(endpoint = "sign_out")]
pub async fn sign_out() -> Result<Option<String>, AppError> {
    let (state, caller) = context::caller().await?;
    let now = state.clock.now();
    let mut tx = state.db.begin_write().await?;
    let entry = AuditEntry::new(caller.actor(), AuditAction::SignOut, ObjectType::User, caller.user_id());
    services::audit::record(&mut tx, entry, caller.request_id.as_deref(), now).await?;
    tx.commit().await?;
    // Deletes the session from the store: the old cookie is worthless from here on.
    context::session().await?.logout().await.map_err(|e| AppError::internal("logout", e))?;
    let through_provider =
        matches!(caller.authentication, Some(Authentication { method: AuthMethod::Provider { .. }, .. }));
    match &state.oidc {
        Some(provider) if through_provider => {
            Ok(provider.end_session_url(&format!("{}/sign-in", state.server.public_url)).await)
        }
        _ => Ok(None),
    }
}

/// Whether the company's identity provider is configured: the sign-in page offers it first.
#[cfg(feature = "ssr")]
pub fn company_sign_in_configured() -> bool {
    context::state().is_ok_and(|state| state.oidc.is_some())
}

#[server(endpoint = "me")]
pub async fn me() -> Result<CurrentUser, AppError> {
    context::read_once("me", async { context::caller().await.map(|(_, caller)| caller.session.user) }).await
}

#[server(endpoint = "change_password")]
pub async fn change_password(current_password: String, new_password: String) -> Result<(), AppError> {
    let (state, caller) = context::caller().await?;
    let refreshed = services::users::change_own_password(
        &state,
        &caller,
        &context::client_ip().await,
        current_password,
        new_password,
    )
    .await?;
    // Keep this session (bound to the new hash); every other session of this user ends.
    let mut session = context::session().await?;
    session.login(&refreshed).await.map_err(|e| AppError::internal("session refresh", e))?;
    Ok(())
}

/// Ends every session of the caller, this one included, and every chat link of theirs.
#[server(endpoint = "sign_out_everywhere")]
pub async fn sign_out_everywhere() -> Result<(), AppError> {
    let (state, caller) = context::caller().await?;
    services::users::sign_out_everywhere(&state, &caller).await?;
    context::session().await?.logout().await.map_err(|e| AppError::internal("logout", e))?;
    Ok(())
}

/// The language switch (header and sign-in page): remembered in the browser, and for a signed-in user also in
/// their account, so that it follows them to another browser.
#[server(endpoint = "switch_language")]
pub async fn switch_language(language: String) -> Result<(), AppError> {
    let language = crate::domain::preferences::language(&language)
        .map_err(|m| AppError::invalid(crate::domain::invalid::Field::Language, m))?;
    if let Ok((state, caller)) = context::caller().await {
        services::users::set_preferences(&state, &caller, Some(language), None).await?;
    }
    context::remember_preferences(language, None);
    Ok(())
}

/// The account page's display settings: language and time zone.
#[server(endpoint = "save_preferences")]
pub async fn save_preferences(language: String, time_zone: String) -> Result<(), AppError> {
    let (state, caller) = context::caller().await?;
    let (language, zone) = services::users::set_preferences(&state, &caller, Some(&language), Some(&time_zone)).await?;
    context::remember_preferences(language, Some(zone));
    Ok(())
}

/// The caller's links to chat accounts, and whether a chat is set up here.
#[server(endpoint = "account/chat_links")]
pub async fn chat_links() -> Result<crate::contract::chat::ChatLinks, AppError> {
    context::read_once("account/chat_links", async {
        let (state, caller) = context::caller().await?;
        services::chat::links_of(&state, &caller).await
    })
    .await
}

/// The caller ends their link to a chat account (`slack`).
#[server(endpoint = "account/unlink_chat")]
pub async fn unlink_chat(platform: String) -> Result<(), AppError> {
    let (state, caller) = context::caller().await?;
    let platform = crate::domain::chat::ChatPlatform::parse(&platform).ok_or(AppError::NotFound)?;
    services::chat::unlink(&state, &caller, platform).await
}
