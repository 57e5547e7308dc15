//! A person the company's identity provider vouched for, as a user here: created at their first sign-in, their roles
//! and memberships set from their groups at every sign-in (each mapping's own pairs, never crossed) (each change an
//! audit event with before and after), and refused, with every session of theirs ended, once their groups map to
//! nothing.
use super::audit::record;
use super::session_users::{SessionUser, load_session_user};
use crate::oidc::Identity;
use crate::{AppState, db, passwords};
use contract::AppError;
use domain::audit::{Actor, AuditEntry, ObjectType, SystemActor};
use domain::audit_action::AuditAction;
use domain::conflict::Conflict;
use domain::identity::access_from_groups;
use domain::membership::Access;
use domain::rights::Person;
use serde_json::json;

/// Signs in the person `identity` names; the user is created or brought in line with their groups first. A person
/// the company directory provisioned keeps what the directory gives them (their groups there, the same mappings).
pub async fn sign_in(state: &AppState, identity: &Identity, request_id: Option<&str>) -> Result<SessionUser, AppError> {
    let oidc = state.config.sign_in.oidc.as_ref().ok_or(AppError::NotFound)?;
    let from_token = access_from_groups(&oidc.groups, &identity.groups);
    // A provider account never signs in with a password here: its hash is of a secret nobody holds.
    let unusable = match from_token {
        Some(_) => Some(passwords::hash(super::sign_in::turn(state).await?, passwords::unusable_secret()).await?),
        None => None,
    };
    let now = state.clock.now();
    let mut tx = state.db.begin_write().await?;
    let existing = known_person(&mut tx, identity).await?;
    if let Some(user) = existing.as_ref().filter(|u| u.disabled_at.is_some()) {
        return access_ended(tx, identity, user.id, (request_id, now)).await;
    }
    let access = match &existing {
        Some(user) if user.is_provisioned() => {
            Some(super::users::stored_access(&mut tx, user.id).await?).filter(|a| *a != Access::default())
        }
        _ => from_token,
    };
    let Some(access) = access else {
        refuse(&mut tx, identity, existing.as_ref(), (request_id, now)).await?;
        tx.commit().await?;
        return Err(AppError::Forbidden);
    };
    let provider = provider_actor();
    let row = match existing {
        Some(user) if user.is_provisioned() => user,
        Some(user) => {
            super::users::bring_access_in_line(
                &mut tx,
                &provider,
                (user.id, &user.username),
                &access,
                (request_id, now),
            )
            .await?;
            user
        }
        None => {
            if db::users::by_name_as_meant(&mut tx, &identity.username).await?.is_some() {
                // A local account of that name is not taken over by whoever the provider names so.
                return Err(AppError::conflict(
                    Conflict::UsernameTaken,
                    format!("a local account is named '{}': an admin must resolve it", identity.username),
                ));
            }
            // A new person's access is the token's, which came with the hash made for them.
            let unusable = unusable.ok_or_else(|| AppError::internal("company sign-in", "no hash for a new person"))?;
            let email = identity.email.as_deref();
            let username = domain::identity::sign_in_name(&identity.username);
            let id = db::users::insert(&mut tx, &username, &identity.display_name, email, &unusable, now).await?;
            db::users::link_identity(&mut tx, id, &identity.issuer, &identity.subject).await?;
            super::users::store_access(&mut tx, id, &access).await?;
            let entry =
                AuditEntry::new(provider.clone(), AuditAction::UserCreated, ObjectType::User, id).after(json!({
                    "username": identity.username,
                    "display_name": identity.display_name,
                    "email": email,
                    "issuer": identity.issuer,
                    "roles": access.roles,
                    "memberships": access.memberships,
                }));
            record(&mut tx, entry, request_id, now).await?;
            db::users::by_id(&mut tx, id).await?.ok_or(AppError::NotFound)?
        }
    };
    if let Some((tenant, object_id)) = &identity.entra {
        super::chat::link_company_account(&mut tx, state, row.id, (tenant, object_id), (request_id, now)).await?;
    }
    let entry =
        AuditEntry::new(Actor::user(row.id, &row.username), AuditAction::SignInSucceeded, ObjectType::User, row.id)
            .after(json!({"issuer": identity.issuer, "auth_time": identity.auth_time, "amr": identity.amr}));
    record(&mut tx, entry, request_id, now).await?;
    let user = load_session_user(&mut tx, row).await?;
    tx.commit().await?;
    Ok(user)
}

/// Refused at the door: the access the person had here ends with it, in chat too (and their waiting approvals).
async fn refuse(
    tx: &mut db::Conn,
    identity: &Identity,
    existing: Option<&db::users::UserRow>,
    (request_id, now): (Option<&str>, chrono::DateTime<chrono::Utc>),
) -> Result<(), AppError> {
    let provider = provider_actor();
    if let Some(user) = existing {
        db::users::end_sessions(tx, user.id).await?;
        let nobody = Person { id: user.id, access: Access::default() };
        super::users::access_changed(tx, &provider, &nobody, (request_id, now)).await?;
    }
    let entry = AuditEntry::new(provider, AuditAction::SignInFailed, ObjectType::User, &identity.username)
        .after(json!({"groups": identity.groups, "why": "no group maps to a role"}));
    record(tx, entry, request_id, now).await?;
    tracing::warn!(user = %identity.username, "signed in at the identity provider, but no group maps to a role");
    Ok(())
}

/// The user the provider names: linked at an earlier sign-in, or provisioned by the company directory and signing
/// in for the first time — then linked. A row already linked to another provider account is never taken over; the
/// directory's ID for the person (Entra's object ID, or the subject) is asked first, then their sign-in name,
/// compared exactly in its normalised form (`sign_in_key`) and only when it names one person; never their display
/// name.
async fn known_person(tx: &mut db::Conn, identity: &Identity) -> Result<Option<db::users::UserRow>, AppError> {
    if let Some(user) = db::users::by_identity(tx, &identity.issuer, &identity.subject).await? {
        return Ok(Some(user));
    }
    let mut ids = vec![identity.subject.as_str()];
    ids.extend(identity.entra.as_ref().map(|(_, object_id)| object_id.as_str()));
    let person = match db::directory::unlinked_by_external_id(tx, &ids).await? {
        Some(person) => Some(person),
        None => {
            let mut same = db::directory::unlinked_named(tx, &identity.username).await?.into_iter();
            match (same.next(), same.next()) {
                (Some(person), None) => Some(person),
                _ => None,
            }
        }
    };
    let Some(person) = person else { return Ok(None) };
    db::users::link_identity(tx, person.id, &identity.issuer, &identity.subject).await?;
    Ok(db::users::by_id(tx, person.id).await?)
}

fn provider_actor() -> Actor {
    Actor::system(SystemActor::IdentityProvider)
}

/// Disabled by an admin or made inactive by the directory: told so (`Unauthorized`), not that they have no role.
async fn access_ended(
    mut tx: db::Conn,
    identity: &Identity,
    user_id: i64,
    (request_id, now): (Option<&str>, chrono::DateTime<chrono::Utc>),
) -> Result<SessionUser, AppError> {
    let entry = AuditEntry::new(provider_actor(), AuditAction::SignInFailed, ObjectType::User, user_id)
        .after(json!({"issuer": identity.issuer, "why": "the person's access was ended"}));
    record(&mut tx, entry, request_id, now).await?;
    tx.commit().await?;
    Err(AppError::Unauthorized)
}
