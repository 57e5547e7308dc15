//! The signed-in person as the sessions carry them: loaded from the user's row, roles and memberships, and bound
//! to what ends a session when it changes. The sign-in backend (`auth`) reloads them through here on every request.
use crate::AppState;
use crate::db::{self, users::MembershipRow, users::UserRow};
use contract::{CurrentUser, DepartmentDto};
use sha2::{Digest, Sha256};

#[derive(Clone, Debug)]
pub struct SessionUser {
    pub user: CurrentUser,
    /// Changes with the password hash and the session generation (see `session_binding`).
    auth_hash: Vec<u8>,
}

impl SessionUser {
    /// What ends the person's sessions when it changes (axum-login compares it on every request).
    pub fn auth_hash(&self) -> &[u8] {
        &self.auth_hash
    }
}

/// The person with this ID, unless there is none or they are disabled: loaded on every request, so a disabled
/// user or a revoked role takes effect at the next call.
pub async fn active(state: &AppState, id: i64) -> Result<Option<SessionUser>, sqlx::Error> {
    let mut connection = state.db.connection().await?;
    let Some((row, roles, memberships)) = db::users::with_access(&mut connection, id).await? else {
        return Ok(None);
    };
    Ok(row.disabled_at.is_none().then(|| session_user(row, roles, memberships)))
}

/// What a session is bound to: the password hash (a password change ends the other sessions) and the session
/// generation (disabling the user ends them all, for good).
fn session_binding(row: &UserRow) -> Vec<u8> {
    let mut hash = Sha256::new();
    hash.update(row.password_hash.as_bytes());
    hash.update(row.session_generation.to_be_bytes());
    hash.finalize().to_vec()
}

/// The caller as they are now, read in the caller's write transaction: a decision counts for the person whose
/// access holds when it is recorded, not as the request loaded them. A disable, a deprovisioning, a role or
/// membership taken away, a password change or a sign-out everywhere committed since refuses it (`Unauthorized`:
/// the session ended). Writers take turns (`Db::begin_write`: the writer's lock, and on PostgreSQL the audit head
/// locked first), so no access change commits between this read and the decision's own commit.
pub async fn as_now(tx: &mut db::Conn, caller: &super::Caller) -> Result<domain::rights::Person, contract::AppError> {
    let Some((row, roles, memberships)) = db::users::with_access(tx, caller.user_id()).await? else {
        return Err(contract::AppError::Unauthorized);
    };
    if row.disabled_at.is_some() {
        return Err(contract::AppError::Unauthorized);
    }
    let now = session_user(row, roles, memberships);
    if now.auth_hash != caller.session.auth_hash {
        return Err(contract::AppError::Unauthorized);
    }
    Ok(super::person_of(&now.user))
}

/// The person with this ID as the rules see them now, in the caller's transaction; `None` once disabled or gone.
pub async fn person_now(tx: &mut db::Conn, id: i64) -> Result<Option<domain::rights::Person>, sqlx::Error> {
    let Some((row, roles, memberships)) = db::users::with_access(tx, id).await? else { return Ok(None) };
    Ok(row.disabled_at.is_none().then(|| super::person_of(&session_user(row, roles, memberships).user)))
}

/// The account a browser's device cookie is for (`domain::throttle::DeviceAccount`): its epoch is the session
/// binding, which a password change and a sign-out everywhere move on.
pub fn device_epoch(row: &UserRow) -> Vec<u8> {
    session_binding(row)
}

pub async fn load_session_user(tx: &mut db::Conn, row: UserRow) -> Result<SessionUser, sqlx::Error> {
    let roles = db::users::roles(tx, row.id).await?;
    let memberships = db::users::memberships(tx, row.id).await?;
    Ok(session_user(row, roles, memberships))
}

/// The person as the pages and the rules see them: organisation-wide roles and memberships; `roles` lists every
/// role held anywhere, `departments` every department they belong to (with its name).
fn session_user(row: UserRow, roles: Vec<String>, memberships: Vec<MembershipRow>) -> SessionUser {
    let mut departments: Vec<DepartmentDto> = Vec::new();
    for m in &memberships {
        if !departments.iter().any(|d| d.code == m.code) {
            departments.push(DepartmentDto { code: m.code.clone(), name: m.name.clone(), name_en: m.name_en.clone() });
        }
    }
    let access = db::users::access_of(&roles, &memberships);
    SessionUser {
        auth_hash: session_binding(&row),
        user: CurrentUser {
            id: row.id,
            username: row.username,
            display_name: row.display_name,
            roles: access.all_roles(),
            departments,
            memberships: access.memberships.into_iter().collect(),
            language: row.language,
            time_zone: row.time_zone,
        },
    }
}
