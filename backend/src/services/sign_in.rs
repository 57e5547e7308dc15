//! Checking a sign-in: throttled per account from each place, per place and per failing places of an account
//! (`domain::throttle`), the same work and the same
//! answer for an unknown name, a disabled account and a wrong password, every outcome audited (an unknown name
//! only as a keyed hash: `domain::claimed_name`).
use super::audit::record;
use super::session_users::{SessionUser, load_session_user};
use crate::passwords;
use crate::turns::Turn;
use crate::{AppState, db};
use chrono::Duration;
use contract::AppError;
use domain::audit::{Actor, AuditEntry, ObjectType};
use domain::audit_action::AuditAction;
use domain::claimed_name::ClaimedName;
use domain::invalid::{Field, Invalid, Rule};
use domain::throttle::{Device, DeviceAccount, WINDOW_MINUTES, address_key, admits, device_of, device_token};
pub use domain::throttle::{MAX_FAILING_PLACES_PER_ACCOUNT, MAX_FAILURES_PER_ACCOUNT, MAX_FAILURES_PER_ADDRESS};
use rand::RngCore;
use serde_json::json;

pub struct Attempt {
    pub username: String,
    pub password: String,
    pub ip: String,
    pub request_id: Option<String>,
    /// The browser's device cookie (`domain::throttle::DEVICE_COOKIE`), if it sent one.
    pub device: Option<String>,
}

/// A password check may go ahead: the attempt is counted, and a turn to hash is held.
pub(super) struct Admitted {
    pub turn: Turn,
    pub user: Option<db::users::UserRow>,
}

/// Counts the attempt as a failure before any password is checked, in one write that also decides, so that
/// however many guesses arrive at once at most the limit reach the check (a success takes its count back).
/// Then waits for a turn to hash; beyond the short queue the answer is 429 too.
pub(super) async fn admit(
    state: &AppState,
    username: &str,
    (ip, device): (&str, Option<&str>),
    request_id: Option<&str>,
) -> Result<Admitted, AppError> {
    let now = state.clock.now();
    let address = address_key(ip);
    let since = now - Duration::minutes(WINDOW_MINUTES);
    let mut tx = state.db.begin_write().await?;
    let failures = db::sign_in::recent_failures(&mut tx, username, &address, since).await?;
    let user = db::users::by_username(&mut tx, username).await?;
    let device = match (device, &user) {
        (Some(token), Some(row)) => {
            let epoch = super::session_users::device_epoch(row);
            let account = DeviceAccount { id: row.id, epoch: &epoch };
            device_of(device_key(&mut tx).await?.as_bytes(), Some(account), Some(token))
        }
        _ => Device::Unknown,
    };
    if let Err(wait) = admits(&failures, now, device) {
        let name = claimed(&mut tx, username, user.is_some()).await?;
        let entry = AuditEntry::new(
            Actor::anonymous(name.label()),
            AuditAction::SignInThrottled,
            ObjectType::User,
            name.label(),
        )
        .after(json!({"ip": ip, "name_hash": name.hash(), "failures_for_account_here": failures.here,
                "failures_from_address": failures.from_place, "other_failing_places": failures.other_places}));
        record(&mut tx, entry, request_id, now).await?;
        tx.commit().await?;
        tracing::warn!(name = %name.label(), %ip, "sign-in throttled");
        return Err(AppError::TooManyRequests { retry_after_secs: wait.num_seconds().max(1) as u64 });
    }
    db::sign_in::record_failure(&mut tx, username, &address, now).await?;
    tx.commit().await?;
    let turn =
        turn(state).await.inspect_err(|_| tracing::warn!(%ip, "sign-in refused: too many password checks waiting"))?;
    Ok(Admitted { turn, user })
}

/// The installation's key for device cookies.
async fn device_key(tx: &mut db::Conn) -> Result<String, AppError> {
    let mut fresh = [0u8; 32];
    rand::rngs::OsRng.fill_bytes(&mut fresh);
    Ok(db::sign_in::device_key(tx, &hex::encode(fresh)).await?)
}

/// What the trail may keep of a typed name (`domain::claimed_name`), with this installation's key.
async fn claimed(tx: &mut db::Conn, typed: &str, is_an_account: bool) -> Result<ClaimedName, AppError> {
    let mut fresh = [0u8; 32];
    rand::rngs::OsRng.fill_bytes(&mut fresh);
    let key = db::sign_in::name_key(tx, &hex::encode(fresh)).await?;
    Ok(ClaimedName::of(typed, is_an_account, key.as_bytes()))
}

/// A turn for an Argon2 hash or check, or 429 when too many wait (`passwords::Checks`).
pub(super) async fn turn(state: &AppState) -> Result<Turn, AppError> {
    state.password_checks.turn().await.map_err(|_| AppError::TooManyRequests { retry_after_secs: 1 })
}

pub async fn check(state: &AppState, attempt: Attempt) -> Result<SignedIn, AppError> {
    let username = attempt.username.trim().to_lowercase();
    let request_id = attempt.request_id.as_deref();
    let Admitted { turn, user } = admit(state, &username, (&attempt.ip, attempt.device.as_deref()), request_id).await?;
    let is_an_account = user.is_some();
    // With company sign-in, only the break-glass users keep a password (the others fail as a wrong one would).
    let active = user.filter(|u| u.disabled_at.is_none() && state.config.sign_in.password_allowed_for(&u.username));
    let verified = passwords::verify(turn, attempt.password, active.as_ref().map(|u| u.password_hash.clone())).await?;

    let now = state.clock.now();
    let mut tx = state.db.begin_write().await?;
    let Some(mut row) = active.filter(|_| verified.ok) else {
        let name = claimed(&mut tx, &username, is_an_account).await?;
        let entry =
            AuditEntry::new(Actor::anonymous(name.label()), AuditAction::SignInFailed, ObjectType::User, name.label())
                .after(json!({"ip": attempt.ip, "name_hash": name.hash()}));
        record(&mut tx, entry, request_id, now).await?;
        tx.commit().await?;
        tracing::warn!(name = %name.label(), ip = %attempt.ip, "sign-in failed");
        return Err(AppError::invalid(
            Field::Password,
            Invalid::new(Rule::WrongSignIn, "the sign-in name or the password is wrong"),
        ));
    };
    let rehashed = verified.rehashed.is_some();
    if let Some(hash) = verified.rehashed {
        db::users::set_password_hash(&mut tx, row.id, &hash, now).await?;
        row.password_hash = hash;
    }
    db::sign_in::forget(&mut tx, &username, &address_key(&attempt.ip), now - Duration::minutes(WINDOW_MINUTES)).await?;
    let entry =
        AuditEntry::new(Actor::user(row.id, &row.username), AuditAction::SignInSucceeded, ObjectType::User, row.id)
            .after(json!({"ip": attempt.ip, "rehashed": rehashed}));
    record(&mut tx, entry, request_id, now).await?;
    // The browser is known for the account from now on (`domain::throttle::Device`): a fresh device cookie.
    let mut nonce = [0u8; 16];
    rand::rngs::OsRng.fill_bytes(&mut nonce);
    let epoch = super::session_users::device_epoch(&row);
    let account = DeviceAccount { id: row.id, epoch: &epoch };
    let device = device_token(device_key(&mut tx).await?.as_bytes(), account, &hex::encode(nonce));
    let user = load_session_user(&mut tx, row).await?;
    tx.commit().await?;
    Ok(SignedIn { user, device })
}

/// A sign-in that succeeded: the person, and the device cookie for the browser they signed in from.
pub struct SignedIn {
    pub user: SessionUser,
    pub device: String,
}
