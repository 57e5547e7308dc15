//! The company directory's people and groups (SCIM 2.0): the columns a provisioned user carries, the groups the
//! directory keeps here and who is in them.
use super::{Conn, on_conn};
use chrono::{DateTime, Utc};

/// A person the directory provisioned (and has not deleted).
#[derive(Clone, Debug, sqlx::FromRow)]
pub struct PersonRow {
    pub id: i64,
    pub scim_id: String,
    pub username: String,
    pub display_name: String,
    pub email: Option<String>,
    pub scim_external_id: Option<String>,
    pub scim_resource_json: Option<String>,
    pub disabled_at: Option<DateTime<Utc>>,
    /// An admin's hold (emergency disable): the person stays disabled whatever the directory says.
    pub held_at: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
    pub provisioned_at: Option<DateTime<Utc>>,
}

const PERSON_COLUMNS: &str = "id, scim_id, username, display_name, email, scim_external_id, scim_resource_json, \
     disabled_at, held_at, created_at, provisioned_at";

pub async fn person(tx: &mut Conn, scim_id: &str) -> Result<Option<PersonRow>, sqlx::Error> {
    let sql = format!("SELECT {PERSON_COLUMNS} FROM users WHERE scim_id = $1 AND scim_deleted_at IS NULL");
    on_conn!(tx, |c| sqlx::query_as(&sql).bind(scim_id).fetch_optional(c).await)
}

pub async fn people(tx: &mut Conn) -> Result<Vec<PersonRow>, sqlx::Error> {
    let sql =
        format!("SELECT {PERSON_COLUMNS} FROM users WHERE scim_id IS NOT NULL AND scim_deleted_at IS NULL ORDER BY id");
    on_conn!(tx, |c| sqlx::query_as(&sql).fetch_all(c).await)
}

/// The provisioned people whose sign-in name is `user_name` (in the form people mean it: any case, width or
/// invisible character) or whose `externalId` is `external_id` (exactly): a directory's look-up of one person,
/// without reading everyone.
pub async fn people_named(
    tx: &mut Conn,
    user_name: Option<&str>,
    external_id: Option<&str>,
) -> Result<Vec<PersonRow>, sqlx::Error> {
    let sql = format!(
        "SELECT {PERSON_COLUMNS} FROM users WHERE scim_id IS NOT NULL AND scim_deleted_at IS NULL
         AND (username_key = $1 OR scim_external_id = $2) ORDER BY id"
    );
    let key = user_name.map(domain::identity::sign_in_key);
    on_conn!(tx, |c| sqlx::query_as(&sql).bind(&key).bind(external_id).fetch_all(c).await)
}

/// The provisioned person the directory knows by one of `external_ids` (its `externalId`: Entra's object ID, or
/// the subject), not linked to any provider account yet.
pub async fn unlinked_by_external_id(tx: &mut Conn, external_ids: &[&str]) -> Result<Option<PersonRow>, sqlx::Error> {
    let sql = format!(
        "SELECT {PERSON_COLUMNS} FROM users WHERE scim_id IS NOT NULL AND scim_deleted_at IS NULL
         AND identity_subject IS NULL AND scim_external_id IN ($1, $2) LIMIT 1"
    );
    let first = external_ids.first().copied().unwrap_or_default();
    let second = external_ids.get(1).copied().unwrap_or(first);
    on_conn!(tx, |c| sqlx::query_as(&sql).bind(first).bind(second).fetch_optional(c).await)
}

/// Provisioned people not linked to any provider account yet whose sign-in name is `username` in any (ASCII)
/// case: the candidates a company sign-in's name is compared with, exactly, in its normalised form.
pub async fn unlinked_named(tx: &mut Conn, username: &str) -> Result<Vec<PersonRow>, sqlx::Error> {
    let sql = format!(
        "SELECT {PERSON_COLUMNS} FROM users WHERE scim_id IS NOT NULL AND scim_deleted_at IS NULL
         AND identity_subject IS NULL AND username_key = $1"
    );
    let key = domain::identity::sign_in_key(username);
    on_conn!(tx, |c| sqlx::query_as(&sql).bind(&key).fetch_all(c).await)
}

/// What the directory says of a person, as stored in the users row.
pub struct PersonFields<'a> {
    pub username: &'a str,
    pub display_name: &'a str,
    pub email: Option<&'a str>,
    pub external_id: Option<&'a str>,
    pub resource_json: String,
}

/// Marks a user as the directory's, with the ID it knows them by here (a returning person is provisioned again).
/// A provider account linked to the row before is not: whoever signs in next is matched afresh.
pub async fn provision(
    tx: &mut Conn,
    id: i64,
    scim_id: &str,
    fields: &PersonFields<'_>,
    now: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    let sql = "UPDATE users SET scim_id = $2, scim_deleted_at = NULL, identity_issuer = NULL, identity_subject = NULL
               WHERE id = $1";
    on_conn!(tx, |c| sqlx::query(sql).bind(id).bind(scim_id).execute(c).await.map(drop))?;
    update_person(tx, id, fields, now).await
}

pub async fn update_person(
    tx: &mut Conn,
    id: i64,
    fields: &PersonFields<'_>,
    now: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    on_conn!(tx, |c| sqlx::query(
        "UPDATE users SET username = $2, display_name = $3, email = $4, scim_external_id = $5,
         scim_resource_json = $6, provisioned_at = $7, updated_at = $7, username_key = $8 WHERE id = $1"
    )
    .bind(id)
    .bind(fields.username)
    .bind(fields.display_name)
    .bind(fields.email)
    .bind(fields.external_id)
    .bind(&fields.resource_json)
    .bind(now)
    .bind(domain::identity::sign_in_key(fields.username))
    .execute(c)
    .await
    .map(drop))
}

/// The directory deleted the person: the row stays (the trail names them), the directory no longer sees them, and
/// no provider account is linked to it any more (a person given the name later is not signed into it).
pub async fn mark_deleted(tx: &mut Conn, id: i64, now: DateTime<Utc>) -> Result<(), sqlx::Error> {
    let sql = "UPDATE users SET scim_deleted_at = $2, provisioned_at = $2, identity_issuer = NULL,
               identity_subject = NULL WHERE id = $1";
    on_conn!(tx, |c| sqlx::query(sql).bind(id).bind(now).execute(c).await.map(drop))
}

/// Notes that the directory changed a person (their groups, their being active) now.
pub async fn touch(tx: &mut Conn, id: i64, now: DateTime<Utc>) -> Result<(), sqlx::Error> {
    on_conn!(tx, |c| sqlx::query("UPDATE users SET provisioned_at = $2 WHERE id = $1")
        .bind(id)
        .bind(now)
        .execute(c)
        .await
        .map(drop))
}

#[derive(Clone, Debug, sqlx::FromRow)]
pub struct GroupRow {
    pub id: i64,
    pub scim_id: String,
    pub display_name: String,
    pub external_id: Option<String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

const GROUP_COLUMNS: &str = "id, scim_id, display_name, external_id, created_at, updated_at";

pub async fn group(tx: &mut Conn, scim_id: &str) -> Result<Option<GroupRow>, sqlx::Error> {
    let sql = format!("SELECT {GROUP_COLUMNS} FROM scim_groups WHERE scim_id = $1");
    on_conn!(tx, |c| sqlx::query_as(&sql).bind(scim_id).fetch_optional(c).await)
}

pub async fn groups(tx: &mut Conn) -> Result<Vec<GroupRow>, sqlx::Error> {
    let sql = format!("SELECT {GROUP_COLUMNS} FROM scim_groups ORDER BY id");
    on_conn!(tx, |c| sqlx::query_as(&sql).fetch_all(c).await)
}

/// The groups a user is in.
pub async fn groups_of(tx: &mut Conn, user_id: i64) -> Result<Vec<GroupRow>, sqlx::Error> {
    let sql = format!(
        "SELECT {} FROM scim_groups g JOIN scim_group_members m ON m.group_id = g.id WHERE m.user_id = $1
         ORDER BY g.id",
        GROUP_COLUMNS.split(", ").map(|c| format!("g.{c}")).collect::<Vec<_>>().join(", ")
    );
    on_conn!(tx, |c| sqlx::query_as(&sql).bind(user_id).fetch_all(c).await)
}

pub async fn insert_group(
    tx: &mut Conn,
    scim_id: &str,
    display_name: &str,
    external_id: Option<&str>,
    now: DateTime<Utc>,
) -> Result<i64, sqlx::Error> {
    on_conn!(tx, |c| sqlx::query_scalar(
        "INSERT INTO scim_groups (scim_id, display_name, external_id, created_at, updated_at)
         VALUES ($1, $2, $3, $4, $4) RETURNING id"
    )
    .bind(scim_id)
    .bind(display_name)
    .bind(external_id)
    .bind(now)
    .fetch_one(c)
    .await)
}

pub async fn update_group(
    tx: &mut Conn,
    id: i64,
    display_name: &str,
    external_id: Option<&str>,
    now: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    on_conn!(tx, |c| sqlx::query(
        "UPDATE scim_groups SET display_name = $2, external_id = $3, updated_at = $4 WHERE id = $1"
    )
    .bind(id)
    .bind(display_name)
    .bind(external_id)
    .bind(now)
    .execute(c)
    .await
    .map(drop))
}

/// A group's members: (user ID, the directory's ID for them, display name), provisioned people only.
pub async fn members(tx: &mut Conn, group_id: i64) -> Result<Vec<(i64, String, String)>, sqlx::Error> {
    on_conn!(tx, |c| sqlx::query_as(
        "SELECT u.id, u.scim_id, u.display_name FROM scim_group_members m JOIN users u ON u.id = m.user_id
         WHERE m.group_id = $1 AND u.scim_id IS NOT NULL AND u.scim_deleted_at IS NULL ORDER BY u.id"
    )
    .bind(group_id)
    .fetch_all(c)
    .await)
}

pub async fn add_member(tx: &mut Conn, group_id: i64, user_id: i64) -> Result<(), sqlx::Error> {
    on_conn!(tx, |c| sqlx::query(
        "INSERT INTO scim_group_members (group_id, user_id) VALUES ($1, $2) ON CONFLICT DO NOTHING"
    )
    .bind(group_id)
    .bind(user_id)
    .execute(c)
    .await
    .map(drop))
}

pub async fn remove_member(tx: &mut Conn, group_id: i64, user_id: i64) -> Result<(), sqlx::Error> {
    on_conn!(tx, |c| sqlx::query("DELETE FROM scim_group_members WHERE group_id = $1 AND user_id = $2")
        .bind(group_id)
        .bind(user_id)
        .execute(c)
        .await
        .map(drop))
}

/// Takes a user out of every group (the directory deleted them).
pub async fn leave_all_groups(tx: &mut Conn, user_id: i64) -> Result<(), sqlx::Error> {
    on_conn!(tx, |c| sqlx::query("DELETE FROM scim_group_members WHERE user_id = $1")
        .bind(user_id)
        .execute(c)
        .await
        .map(drop))
}

/// Deletes a group and its memberships (neither is history: what they gave is audited on each user).
pub async fn delete_group(tx: &mut Conn, id: i64) -> Result<(), sqlx::Error> {
    on_conn!(tx, |c| sqlx::query("DELETE FROM scim_group_members WHERE group_id = $1")
        .bind(id)
        .execute(c)
        .await
        .map(drop))?;
    on_conn!(tx, |c| sqlx::query("DELETE FROM scim_groups WHERE id = $1").bind(id).execute(c).await.map(drop))
}

/// Every provisioned person's groups at once (for a list): (user ID, group's ID here, group's display name).
pub async fn all_group_members(tx: &mut Conn) -> Result<Vec<(i64, String, String)>, sqlx::Error> {
    on_conn!(tx, |c| sqlx::query_as(
        "SELECT m.user_id, g.scim_id, g.display_name FROM scim_group_members m JOIN scim_groups g ON g.id = m.group_id
         ORDER BY m.user_id, g.id"
    )
    .fetch_all(c)
    .await)
}
