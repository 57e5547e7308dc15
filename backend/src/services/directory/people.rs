//! People the directory provisions: created (or a returning person, or someone who signed in with the company
//! account before, taken in), read, changed, made inactive, deleted. A local account's name is never taken over.
use super::{Named, bring_in_line, directory_actor, end_access};
use crate::services::api_clients::ApiClient;
use crate::services::audit::record;
use crate::{AppState, db, passwords};
use chrono::{DateTime, Utc};
use contract::AppError;
use domain::audit::{Actor, AuditEntry, ObjectType};
use domain::audit_action::AuditAction;
use domain::conflict::Conflict;
use domain::identity::sign_in_name;
use domain::invalid::{Field, Invalid, Rule};
use serde_json::{Value, json};

/// What the directory says of a person: the attributes the gate keeps in its own columns, and the resource as sent
/// (kept whole, so that what the directory wrote reads back as it wrote it).
#[derive(Clone, Debug)]
pub struct PersonInput {
    pub user_name: String,
    pub display_name: String,
    pub email: Option<String>,
    pub external_id: Option<String>,
    /// `active` as the directory sent it; absent: unchanged (a new person is active).
    pub active: Option<bool>,
    pub resource: Value,
}

#[derive(Clone, Debug)]
pub struct Person {
    pub scim_id: String,
    pub user_name: String,
    pub external_id: Option<String>,
    pub active: bool,
    pub resource: Value,
    pub groups: Vec<Named>,
    pub created_at: DateTime<Utc>,
    pub changed_at: DateTime<Utc>,
}

impl Person {
    fn of(row: db::directory::PersonRow, groups: Vec<Named>) -> Person {
        let resource = row.scim_resource_json.as_deref().and_then(|j| serde_json::from_str(j).ok());
        Person {
            scim_id: row.scim_id,
            user_name: row.username,
            external_id: row.scim_external_id,
            // While an admin holds them, the directory still reads its own word (the hold is not its to see).
            active: match row.held_at {
                Some(_) => domain::directory::says_active(resource.as_ref()),
                None => row.disabled_at.is_none(),
            },
            resource: resource.unwrap_or_else(|| json!({})),
            groups,
            changed_at: row.provisioned_at.unwrap_or(row.created_at),
            created_at: row.created_at,
        }
    }
}

fn checked(input: &PersonInput) -> Result<(), AppError> {
    let name = input.user_name.trim();
    if name.is_empty() || name.chars().count() > 256 || name.chars().any(char::is_control) {
        return Err(AppError::invalid(
            Field::Username,
            Invalid::new(Rule::OutOfRange, "userName must be 1 to 256 characters, without control characters"),
        ));
    }
    if input.display_name.trim().is_empty() || input.display_name.chars().count() > 256 {
        return Err(AppError::invalid(
            Field::DisplayName,
            Invalid::new(Rule::OutOfRange, "the display name must be 1 to 256 characters"),
        ));
    }
    Ok(())
}

fn fields(input: &PersonInput) -> Result<db::directory::PersonFields<'_>, AppError> {
    checked(input)?;
    let resource_json =
        serde_json::to_string(&input.resource).map_err(|e| AppError::internal("a SCIM resource as JSON", e))?;
    Ok(db::directory::PersonFields {
        username: input.user_name.trim(),
        display_name: input.display_name.trim(),
        email: input.email.as_deref(),
        external_id: input.external_id.as_deref(),
        resource_json,
    })
}

async fn load(tx: &mut db::Conn, row: db::directory::PersonRow) -> Result<Person, AppError> {
    let groups = db::directory::groups_of(tx, row.id).await?;
    let groups = groups.into_iter().map(|g| Named { scim_id: g.scim_id, display: g.display_name }).collect();
    Ok(Person::of(row, groups))
}

pub async fn person(state: &AppState, client: &ApiClient, scim_id: &str) -> Result<Person, AppError> {
    directory_actor(state, client)?;
    let mut tx = state.db.begin_read().await?;
    let row = db::directory::person(&mut tx, scim_id).await?.ok_or(AppError::NotFound)?;
    load(&mut tx, row).await
}

/// Everyone the directory provisioned (the process filters and pages them as the directory asks).
pub async fn people(state: &AppState, client: &ApiClient) -> Result<Vec<Person>, AppError> {
    directory_actor(state, client)?;
    let mut tx = state.db.begin_read().await?;
    let rows = db::directory::people(&mut tx).await?;
    let mut memberships = db::directory::all_group_members(&mut tx).await?.into_iter().peekable();
    let mut people = Vec::with_capacity(rows.len());
    for row in rows {
        let mut groups = Vec::new();
        // Both in user order; memberships of people the directory deleted are passed over.
        while memberships.next_if(|(user, _, _)| *user < row.id).is_some() {}
        while let Some((_, scim_id, display)) = memberships.next_if(|(user, _, _)| *user == row.id) {
            groups.push(Named { scim_id, display });
        }
        people.push(Person::of(row, groups));
    }
    Ok(people)
}

/// Who a directory looks for by sign-in name (any case) or `externalId`: read alone, not with everyone.
pub async fn people_named(
    state: &AppState,
    client: &ApiClient,
    (user_name, external_id): (Option<&str>, Option<&str>),
) -> Result<Vec<Person>, AppError> {
    directory_actor(state, client)?;
    let mut tx = state.db.begin_read().await?;
    let mut people = Vec::new();
    for row in db::directory::people_named(&mut tx, user_name, external_id).await? {
        people.push(load(&mut tx, row).await?);
    }
    Ok(people)
}

/// A new person from the directory. Their sign-in name may be that of someone who signed in with the company
/// account before (the same provider vouches for both: taken in), or of a person the directory deleted and now
/// sends back (provisioned again, their history kept); never that of a local account.
pub async fn create_person(state: &AppState, client: &ApiClient, mut input: PersonInput) -> Result<Person, AppError> {
    let actor = directory_actor(state, client)?;
    input.user_name = sign_in_name(&input.user_name);
    let fields = fields(&input)?;
    // Provisioned people sign in with the company account: the hash is of a secret nobody holds.
    let unusable = passwords::hash(crate::services::sign_in::turn(state).await?, passwords::unusable_secret()).await?;
    let now = state.clock.now();
    let scim_id = uuid::Uuid::new_v4().to_string();
    let mut tx = state.db.begin_write().await?;
    // Taken in whatever case, width or invisible characters it was given (`sign_in_key`).
    let id = match db::users::by_name_as_meant(&mut tx, fields.username).await? {
        Some(user) if user.identity_issuer.is_none() && !user.is_provisioned() => {
            return Err(AppError::conflict(
                Conflict::UsernameTaken,
                format!("a local account is named '{}': an admin must rename or remove it first", fields.username),
            ));
        }
        Some(user) if db::directory::person(&mut tx, user.scim_id.as_deref().unwrap_or_default()).await?.is_some() => {
            return Err(AppError::conflict(
                Conflict::UsernameTaken,
                format!("the directory provisioned '{}' already", fields.username),
            ));
        }
        Some(user) => user.id,
        None => db::users::insert(&mut tx, fields.username, fields.display_name, fields.email, &unusable, now).await?,
    };
    db::directory::provision(&mut tx, id, &scim_id, &fields, now).await?;
    let entry = AuditEntry::new(actor.clone(), AuditAction::UserCreated, ObjectType::User, id).after(json!({
        "username": fields.username,
        "display_name": fields.display_name,
        "email": fields.email,
        "external_id": fields.external_id,
        "source": "directory",
    }));
    record(&mut tx, entry, None, now).await?;
    // A returning person starts from nothing: their groups give them what they hold.
    db::directory::leave_all_groups(&mut tx, id).await?;
    bring_in_line(&mut tx, state, &actor, id, (None, now)).await?;
    set_active(&mut tx, &actor, id, input.active.or(Some(true)), now).await?;
    let row = db::directory::person(&mut tx, &scim_id).await?.ok_or(AppError::NotFound)?;
    let person = load(&mut tx, row).await?;
    tx.commit().await?;
    Ok(person)
}

/// Changes a person as `edit` says (a replacement, or a PATCH applied to what is stored), in one transaction.
pub async fn update_person(
    state: &AppState,
    client: &ApiClient,
    scim_id: &str,
    edit: impl FnOnce(&Person) -> Result<PersonInput, AppError>,
) -> Result<Person, AppError> {
    let actor = directory_actor(state, client)?;
    let now = state.clock.now();
    let mut tx = state.db.begin_write().await?;
    let row = db::directory::person(&mut tx, scim_id).await?.ok_or(AppError::NotFound)?;
    let (id, was) =
        (row.id, details(&row.username, &row.display_name, row.email.as_deref(), row.scim_external_id.as_deref()));
    let before = load(&mut tx, row).await?;
    let mut input = edit(&before)?;
    input.user_name = sign_in_name(&input.user_name);
    let fields = fields(&input)?;
    if fields.username != before.user_name
        && let Some(other) = db::users::by_name_as_meant(&mut tx, fields.username).await?
        && other.id != id
    {
        return Err(AppError::conflict(Conflict::UsernameTaken, format!("'{}' is taken", fields.username)));
    }
    db::directory::update_person(&mut tx, id, &fields, now).await?;
    let now_is = details(fields.username, fields.display_name, fields.email, fields.external_id);
    if now_is != was {
        let entry = AuditEntry::new(actor.clone(), AuditAction::UserDetailsChanged, ObjectType::User, id)
            .before(was)
            .after(now_is);
        record(&mut tx, entry, None, now).await?;
    }
    set_active(&mut tx, &actor, id, input.active, now).await?;
    let row = db::directory::person(&mut tx, scim_id).await?.ok_or(AppError::NotFound)?;
    let person = load(&mut tx, row).await?;
    tx.commit().await?;
    Ok(person)
}

/// What the trail records of a person's details.
fn details(username: &str, display_name: &str, email: Option<&str>, external_id: Option<&str>) -> Value {
    json!({"username": username, "display_name": display_name, "email": email, "external_id": external_id})
}

/// `active: false` ends the person's access at once; `active: true` lets them in again (with what their groups
/// give) — unless an admin holds them (their emergency disable is not the directory's to lift); no `active`
/// changes nothing. Audited when it changes.
async fn set_active(
    tx: &mut db::Conn,
    actor: &Actor,
    id: i64,
    active: Option<bool>,
    now: DateTime<Utc>,
) -> Result<(), AppError> {
    let Some(active) = active else { return Ok(()) };
    let user = db::users::by_id(tx, id).await?.ok_or(AppError::NotFound)?;
    if user.disabled_at.is_none() == active || (active && db::users::held_at(tx, id).await?.is_some()) {
        return Ok(());
    }
    if active {
        db::users::set_disabled_at(tx, id, None, now).await?;
    } else {
        end_access(tx, actor, id, (None, now)).await?;
    }
    db::directory::touch(tx, id, now).await?;
    let action = if active { AuditAction::UserEnabled } else { AuditAction::UserDisabled };
    let entry = AuditEntry::new(actor.clone(), action, ObjectType::User, id)
        .before(json!({"username": user.username, "disabled": active}))
        .after(json!({"username": user.username, "disabled": !active, "source": "directory"}));
    record(tx, entry, None, now).await?;
    Ok(())
}

/// The directory deleted the person: their access ends at once, they leave every group (and so hold nothing),
/// and the directory no longer sees them. The user row stays, disabled: the trail keeps their name.
pub async fn delete_person(state: &AppState, client: &ApiClient, scim_id: &str) -> Result<(), AppError> {
    let actor = directory_actor(state, client)?;
    let now = state.clock.now();
    let mut tx = state.db.begin_write().await?;
    let row = db::directory::person(&mut tx, scim_id).await?.ok_or(AppError::NotFound)?;
    if row.disabled_at.is_none() {
        end_access(&mut tx, &actor, row.id, (None, now)).await?;
    }
    db::directory::leave_all_groups(&mut tx, row.id).await?;
    bring_in_line(&mut tx, state, &actor, row.id, (None, now)).await?;
    db::directory::mark_deleted(&mut tx, row.id, now).await?;
    let entry = AuditEntry::new(actor, AuditAction::UserDeleted, ObjectType::User, row.id)
        .before(json!({"username": row.username, "external_id": row.scim_external_id}))
        .after(json!({"username": row.username, "disabled": true, "source": "directory"}));
    record(&mut tx, entry, None, now).await?;
    tx.commit().await?;
    Ok(())
}
