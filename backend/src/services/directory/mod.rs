//! The company directory (SCIM 2.0 provisioning): people and groups as the directory sends them, and what that
//! does here. Groups map to memberships through the company sign-in's own table (`[[sign_in.oidc.group]]`), so a
//! person holds the same whether they arrived by signing in or by provisioning; a person the directory makes
//! inactive or deletes loses everything at once (sessions, chat links, approvals still waiting), in one
//! transaction with its audit events. The wire format is the process's (`server/src/scim`).
mod groups;
mod people;

pub use groups::{Group, GroupInput, create_group, delete_group, group, groups, update_group};
pub use people::{Person, PersonInput, create_person, delete_person, people, people_named, person, update_person};

use super::api_clients::ApiClient;
use crate::{AppState, db};
use chrono::{DateTime, Utc};
use contract::AppError;
use domain::audit::Actor;
use domain::directory::{ClientPurpose, DirectoryGroup, access_of_groups};
use domain::identity::GroupMapping;
use domain::membership::Access;
use domain::rights::Person as Holder;

/// A resource the directory refers to: its ID here and what it is called.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Named {
    pub scim_id: String,
    pub display: String,
}

/// The group table the directory's groups map through; none without a company sign-in (nobody provisioned could
/// sign in).
fn mappings(state: &AppState) -> Result<&[GroupMapping], AppError> {
    match &state.config.sign_in.oidc {
        Some(oidc) => Ok(&oidc.groups),
        None => Err(super::api_clients::no_company_sign_in()),
    }
}

/// The directory's token, and nothing else, provisions — and only where people sign in with the company account.
fn directory_actor(state: &AppState, client: &ApiClient) -> Result<Actor, AppError> {
    if client.purpose != ClientPurpose::Directory {
        return Err(AppError::Forbidden);
    }
    mappings(state)?;
    Ok(client.actor())
}

/// Sets what a provisioned person holds as their groups here say (audited when it changes; approvals they can
/// no longer stand behind stop counting), and notes the change; whether it changed.
async fn bring_in_line(
    tx: &mut db::Conn,
    state: &AppState,
    actor: &Actor,
    user_id: i64,
    (request_id, now): (Option<&str>, DateTime<Utc>),
) -> Result<bool, AppError> {
    let Some(user) = db::users::by_id(tx, user_id).await? else { return Ok(false) };
    let groups: Vec<DirectoryGroup> = db::directory::groups_of(tx, user_id)
        .await?
        .into_iter()
        .map(|g| DirectoryGroup { display_name: g.display_name, external_id: g.external_id })
        .collect();
    let access = access_of_groups(mappings(state)?, &groups);
    let changed =
        super::users::bring_access_in_line(tx, actor, (user_id, &user.username), &access, (request_id, now)).await?;
    if changed {
        db::directory::touch(tx, user_id, now).await?;
    }
    Ok(changed)
}

/// At start: every person the directory provisioned holds what their groups give by the mappings configured now,
/// so that a mapping added (or removed) in `rerun-gate.toml` takes effect without the directory pushing again.
/// Each change is audited as the configuration's. Returns how many people changed.
pub async fn bring_everyone_in_line(state: &AppState) -> Result<usize, AppError> {
    if state.config.sign_in.oidc.is_none() {
        return Ok(0);
    }
    let actor = Actor::system(domain::audit::SystemActor::Configuration);
    let now = state.clock.now();
    let mut tx = state.db.begin_write().await?;
    let mut changed = 0;
    for person in db::directory::people(&mut tx).await? {
        changed += usize::from(bring_in_line(&mut tx, state, &actor, person.id, (None, now)).await?);
    }
    tx.commit().await?;
    if changed > 0 {
        tracing::info!(changed, "the directory's people brought in line with the configured group mappings");
    }
    Ok(changed)
}

/// The person's access ends now: every session, every chat link and pending link, and their approvals of what
/// still waits. Their memberships stay as the directory set them (reinstated, they hold them again).
async fn end_access(
    tx: &mut db::Conn,
    actor: &Actor,
    user_id: i64,
    (request_id, now): (Option<&str>, DateTime<Utc>),
) -> Result<(), AppError> {
    db::users::set_disabled_at(tx, user_id, Some(now), now).await?;
    db::users::end_sessions(tx, user_id).await?;
    let nobody = Holder { id: user_id, access: Access::default() };
    super::users::access_changed(tx, actor, &nobody, (request_id, now)).await
}
