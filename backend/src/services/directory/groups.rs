//! Groups the directory keeps here, every one it sends: each maps to memberships by the company sign-in's group
//! table, by its name or its `externalId`; one no mapping names gives nothing until a mapping does (at the next
//! start, `bring_everyone_in_line`). A change of a group's members or names brings every person it touches in
//! line, in its transaction.
use super::{Named, bring_in_line, directory_actor};
use crate::services::api_clients::ApiClient;
use crate::services::audit::record;
use crate::{AppState, db};
use chrono::{DateTime, Utc};
use contract::AppError;
use domain::audit::{Actor, AuditEntry, ObjectType};
use domain::audit_action::AuditAction;
use domain::invalid::{Field, Invalid, Rule};
use serde_json::json;
use std::collections::BTreeSet;

#[derive(Clone, Debug)]
pub struct GroupInput {
    pub display_name: String,
    pub external_id: Option<String>,
    /// The directory's IDs (here) of the people in it.
    pub members: Vec<String>,
}

#[derive(Clone, Debug)]
pub struct Group {
    pub scim_id: String,
    pub display_name: String,
    pub external_id: Option<String>,
    pub members: Vec<Named>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

async fn load(tx: &mut db::Conn, row: db::directory::GroupRow) -> Result<Group, AppError> {
    Ok(loaded(tx, row).await?.0)
}

/// The group, and the users in it.
async fn loaded(tx: &mut db::Conn, row: db::directory::GroupRow) -> Result<(Group, BTreeSet<i64>), AppError> {
    let members = db::directory::members(tx, row.id).await?;
    let users = members.iter().map(|(user, _, _)| *user).collect();
    let group = Group {
        members: members.into_iter().map(|(_, scim_id, display)| Named { scim_id, display }).collect(),
        scim_id: row.scim_id,
        display_name: row.display_name,
        external_id: row.external_id,
        created_at: row.created_at,
        updated_at: row.updated_at,
    };
    Ok((group, users))
}

pub async fn group(state: &AppState, client: &ApiClient, scim_id: &str) -> Result<Group, AppError> {
    directory_actor(state, client)?;
    let mut tx = state.db.begin_read().await?;
    let row = db::directory::group(&mut tx, scim_id).await?.ok_or(AppError::NotFound)?;
    load(&mut tx, row).await
}

pub async fn groups(state: &AppState, client: &ApiClient) -> Result<Vec<Group>, AppError> {
    directory_actor(state, client)?;
    let mut tx = state.db.begin_read().await?;
    let mut groups = Vec::new();
    for row in db::directory::groups(&mut tx).await? {
        groups.push(load(&mut tx, row).await?);
    }
    Ok(groups)
}

/// The group's name checked. Every group the directory sends is kept, members and all (a directory whose calls
/// mostly fail is quarantined); a group gives roles only while a `[[sign_in.oidc.group]]` names it.
fn checked(input: &GroupInput) -> Result<(), AppError> {
    let name = input.display_name.trim();
    if name.is_empty() || name.chars().count() > 256 {
        return Err(AppError::invalid(
            Field::Name,
            Invalid::new(Rule::OutOfRange, "displayName must be 1 to 256 characters"),
        ));
    }
    Ok(())
}

/// The users behind the directory's IDs of people; an ID of nobody it provisioned is refused.
async fn member_ids(tx: &mut db::Conn, members: &[String]) -> Result<BTreeSet<i64>, AppError> {
    let mut ids = BTreeSet::new();
    for scim_id in members {
        let Some(person) = db::directory::person(tx, scim_id).await? else {
            return Err(AppError::invalid(
                Field::Memberships,
                Invalid::new(Rule::Unknown, format!("no person provisioned here has the id '{scim_id}'")),
            ));
        };
        ids.insert(person.id);
    }
    Ok(ids)
}

pub async fn create_group(state: &AppState, client: &ApiClient, input: GroupInput) -> Result<Group, AppError> {
    let actor = directory_actor(state, client)?;
    checked(&input)?;
    let now = state.clock.now();
    let scim_id = uuid::Uuid::new_v4().to_string();
    let mut tx = state.db.begin_write().await?;
    let members = member_ids(&mut tx, &input.members).await?;
    let name = input.display_name.trim();
    let id = db::directory::insert_group(&mut tx, &scim_id, name, input.external_id.as_deref(), now).await?;
    for user in &members {
        db::directory::add_member(&mut tx, id, *user).await?;
    }
    let entry =
        AuditEntry::new(actor.clone(), AuditAction::DirectoryGroupCreated, ObjectType::DirectoryGroup, &scim_id)
            .after(json!({"display_name": name, "external_id": input.external_id, "members": members}));
    record(&mut tx, entry, None, now).await?;
    for user in members {
        bring_in_line(&mut tx, state, &actor, user, (None, now)).await?;
    }
    let row = db::directory::group(&mut tx, &scim_id).await?.ok_or(AppError::NotFound)?;
    let group = load(&mut tx, row).await?;
    tx.commit().await?;
    Ok(group)
}

/// Changes a group as `edit` says (a replacement, or a PATCH applied to what is stored), in one transaction.
pub async fn update_group(
    state: &AppState,
    client: &ApiClient,
    scim_id: &str,
    edit: impl FnOnce(&Group) -> Result<GroupInput, AppError>,
) -> Result<Group, AppError> {
    let actor = directory_actor(state, client)?;
    let now = state.clock.now();
    let mut tx = state.db.begin_write().await?;
    let row = db::directory::group(&mut tx, scim_id).await?.ok_or(AppError::NotFound)?;
    let id = row.id;
    let (before, was) = loaded(&mut tx, row).await?;
    let input = edit(&before)?;
    checked(&input)?;
    let now_in = member_ids(&mut tx, &input.members).await?;
    let name = input.display_name.trim();
    let renamed = name != before.display_name || input.external_id != before.external_id;
    db::directory::update_group(&mut tx, id, name, input.external_id.as_deref(), now).await?;
    for gone in was.difference(&now_in) {
        db::directory::remove_member(&mut tx, id, *gone).await?;
    }
    for joined in now_in.difference(&was) {
        db::directory::add_member(&mut tx, id, *joined).await?;
    }
    let touched: BTreeSet<i64> = if renamed { was.union(&now_in).copied().collect() } else { &was ^ &now_in };
    if renamed || !touched.is_empty() {
        let entry =
            AuditEntry::new(actor.clone(), AuditAction::DirectoryGroupChanged, ObjectType::DirectoryGroup, scim_id)
                .before(json!({"display_name": before.display_name, "external_id": before.external_id, "members": was}))
                .after(json!({"display_name": name, "external_id": input.external_id, "members": now_in}));
        record(&mut tx, entry, None, now).await?;
    }
    for user in touched {
        bring_in_line(&mut tx, state, &actor, user, (None, now)).await?;
    }
    let row = db::directory::group(&mut tx, scim_id).await?.ok_or(AppError::NotFound)?;
    let group = load(&mut tx, row).await?;
    tx.commit().await?;
    Ok(group)
}

/// Deletes a group: what it gave its members ends with it.
pub async fn delete_group(state: &AppState, client: &ApiClient, scim_id: &str) -> Result<(), AppError> {
    let actor: Actor = directory_actor(state, client)?;
    let now = state.clock.now();
    let mut tx = state.db.begin_write().await?;
    let row = db::directory::group(&mut tx, scim_id).await?.ok_or(AppError::NotFound)?;
    let members: Vec<i64> = db::directory::members(&mut tx, row.id).await?.into_iter().map(|(id, _, _)| id).collect();
    db::directory::delete_group(&mut tx, row.id).await?;
    let entry = AuditEntry::new(actor.clone(), AuditAction::DirectoryGroupDeleted, ObjectType::DirectoryGroup, scim_id)
        .before(json!({"display_name": row.display_name, "external_id": row.external_id, "members": members}));
    record(&mut tx, entry, None, now).await?;
    for user in members {
        bring_in_line(&mut tx, state, &actor, user, (None, now)).await?;
    }
    tx.commit().await?;
    Ok(())
}
