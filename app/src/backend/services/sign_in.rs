//! Checking a sign-in: throttled per account and per address, the same answer for an unknown user and a
//! wrong password (a dummy hash is verified for unknown users), every outcome audited.
use crate::domain::invalid::{Invalid, Rule};
use crate::domain::audit_action::AuditAction;
use super::audit::record;
use crate::api::AppError;
use crate::backend::auth::{SessionUser, load_session_user};
use crate::backend::{AppState, db, passwords};
use crate::domain::audit::{Actor, AuditEntry};
use chrono::Duration;
use serde_json::json;

const WINDOW_MINUTES: i64 = 15;
pub const MAX_FAILURES_PER_ACCOUNT: i64 = 5;
pub const MAX_FAILURES_PER_ADDRESS: i64 = 30;

pub struct Attempt {
    pub username: String,
    pub password: String,
    pub ip: String,
    pub request_id: Option<String>,
}

pub async fn check(state: &AppState, attempt: Attempt) -> Result<SessionUser, AppError> {
    let now = state.clock.now();
    let username = attempt.username.trim().to_lowercase();
    let since = now - Duration::minutes(WINDOW_MINUTES);

    // Look up without holding the write lock: hashing takes tens of milliseconds.
    let mut read = state.db.begin_read().await?;
    let (by_user, by_ip) = db::sign_in::recent_failures(&mut read, &username, &attempt.ip, since).await?;
    let user = db::users::by_username(&mut read, &username).await?;
    drop(read);

    let request_id = attempt.request_id.as_deref();
    if by_user >= MAX_FAILURES_PER_ACCOUNT || by_ip >= MAX_FAILURES_PER_ADDRESS {
        let mut tx = state.db.begin_write().await?;
        let entry = AuditEntry::new(Actor::anonymous(&username), AuditAction::SignInThrottled, "user", &username)
            .after(json!({"ip": attempt.ip, "failures_for_account": by_user, "failures_from_address": by_ip}));
        record(&mut tx, entry, request_id, now).await?;
        tx.commit().await?;
        tracing::warn!(username = %username, ip = %attempt.ip, "sign-in throttled");
        return Err(AppError::TooManyRequests { retry_after_secs: (WINDOW_MINUTES * 60) as u64 });
    }

    let active = user.filter(|u| u.disabled_at.is_none());
    let verified = passwords::verify(attempt.password.clone(), active.as_ref().map(|u| u.password_hash.clone())).await?;

    // Rehash (stronger parameters) before taking the write lock, for the same reason.
    let new_hash = match verified.ok && verified.needs_rehash {
        true => Some(passwords::hash(attempt.password).await?),
        false => None,
    };

    let mut tx = state.db.begin_write().await?;
    let Some(mut row) = active.filter(|_| verified.ok) else {
        db::sign_in::record_failure(&mut tx, &username, &attempt.ip, now).await?;
        let entry = AuditEntry::new(Actor::anonymous(&username), AuditAction::SignInFailed, "user", &username)
            .after(json!({"ip": attempt.ip}));
        record(&mut tx, entry, request_id, now).await?;
        tx.commit().await?;
        tracing::warn!(username = %username, ip = %attempt.ip, "sign-in failed");
        return Err(AppError::invalid("password", Invalid::new(Rule::WrongSignIn, "the sign-in name or the password is wrong")));
    };
    if let Some(hash) = new_hash {
        db::users::set_password_hash(&mut tx, row.id, &hash, now).await?;
        row.password_hash = hash;
    }
    db::sign_in::forget(&mut tx, &username, since).await?;
    let entry = AuditEntry::new(Actor::user(row.id, &row.username), AuditAction::SignInSucceeded, "user", row.id)
        .after(json!({"ip": attempt.ip, "rehashed": verified.needs_rehash}));
    record(&mut tx, entry, request_id, now).await?;
    let user = load_session_user(&mut tx, row).await?;
    tx.commit().await?;
    Ok(user)
}
