use super::{Conn, on_conn};
use chrono::{DateTime, Utc};
use domain::membership::{Access, Membership};
use domain::roles::Role;

#[derive(Clone, Debug, sqlx::FromRow)]
pub struct UserRow {
    pub id: i64,
    pub username: String,
    pub display_name: String,
    pub password_hash: String,
    pub disabled_at: Option<DateTime<Utc>>,
    /// Where e-mail notifications go; none: in-app only.
    pub email: Option<String>,
    /// The pages' language (`ja`, `en`) and time zone (an IANA name).
    pub language: String,
    pub time_zone: String,
    /// Sessions are bound to it: moving it on ends every session of the user.
    pub session_generation: i64,
    /// The identity provider that vouches for the user (company sign-in); none for a local account.
    pub identity_issuer: Option<String>,
    /// The company directory's ID for a person it provisioned (kept once it deleted them).
    pub scim_id: Option<String>,
    /// When the directory last changed the person.
    pub provisioned_at: Option<DateTime<Utc>>,
}

impl UserRow {
    /// Whether the company directory provisioned the person (and so owns their memberships).
    pub fn is_provisioned(&self) -> bool {
        self.scim_id.is_some()
    }
}

const USER_COLUMNS: &str = "id, username, display_name, password_hash, disabled_at, email, language, time_zone, \
     session_generation, identity_issuer, scim_id, provisioned_at";

pub async fn by_id(tx: &mut Conn, id: i64) -> Result<Option<UserRow>, sqlx::Error> {
    let sql = format!("SELECT {USER_COLUMNS} FROM users WHERE id = $1");
    on_conn!(tx, |c| sqlx::query_as(&sql).bind(id).fetch_optional(c).await)
}

pub async fn by_username(tx: &mut Conn, username: &str) -> Result<Option<UserRow>, sqlx::Error> {
    let sql = format!("SELECT {USER_COLUMNS} FROM users WHERE username = $1");
    on_conn!(tx, |c| sqlx::query_as(&sql).bind(username).fetch_optional(c).await)
}

/// The user whose sign-in name is `name` in the form people mean it (`domain::identity::sign_in_key`): the name
/// taken, whatever its case, width or invisible characters (the first, should rows from before share one).
pub async fn by_name_as_meant(tx: &mut Conn, name: &str) -> Result<Option<UserRow>, sqlx::Error> {
    let sql = format!("SELECT {USER_COLUMNS} FROM users WHERE username_key = $1 ORDER BY id LIMIT 1");
    let key = domain::identity::sign_in_key(name);
    on_conn!(tx, |c| sqlx::query_as(&sql).bind(&key).fetch_optional(c).await)
}

/// Fills the keys of rows stored before they were kept (`by_name_as_meant`); run after the migrations.
pub async fn fill_username_keys(tx: &mut Conn) -> Result<usize, sqlx::Error> {
    let rows: Vec<(i64, String)> = on_conn!(tx, |c| {
        sqlx::query_as("SELECT id, username FROM users WHERE username_key IS NULL").fetch_all(c).await
    })?;
    for (id, username) in &rows {
        let key = domain::identity::sign_in_key(username);
        let sql = "UPDATE users SET username_key = $2 WHERE id = $1";
        on_conn!(tx, |c| sqlx::query(sql).bind(id).bind(&key).execute(c).await.map(drop))?;
    }
    Ok(rows.len())
}

/// When an admin put the user on hold (an emergency disable the company directory cannot lift); none when not.
pub async fn held_at(tx: &mut Conn, id: i64) -> Result<Option<DateTime<Utc>>, sqlx::Error> {
    on_conn!(tx, |c| sqlx::query_scalar("SELECT held_at FROM users WHERE id = $1").bind(id).fetch_one(c).await)
}

/// Puts the user on an admin's hold (`Some`) or lifts it (`None`).
pub async fn set_hold(tx: &mut Conn, id: i64, at: Option<DateTime<Utc>>) -> Result<(), sqlx::Error> {
    on_conn!(tx, |c| sqlx::query("UPDATE users SET held_at = $2 WHERE id = $1")
        .bind(id)
        .bind(at)
        .execute(c)
        .await
        .map(drop))
}

/// The user the identity provider `issuer` names `subject`.
pub async fn by_identity(tx: &mut Conn, issuer: &str, subject: &str) -> Result<Option<UserRow>, sqlx::Error> {
    let sql = format!("SELECT {USER_COLUMNS} FROM users WHERE identity_issuer = $1 AND identity_subject = $2");
    on_conn!(tx, |c| sqlx::query_as(&sql).bind(issuer).bind(subject).fetch_optional(c).await)
}

/// Links a user to the identity provider's name for them.
pub async fn link_identity(tx: &mut Conn, id: i64, issuer: &str, subject: &str) -> Result<(), sqlx::Error> {
    on_conn!(tx, |c| sqlx::query("UPDATE users SET identity_issuer = $1, identity_subject = $2 WHERE id = $3")
        .bind(issuer)
        .bind(subject)
        .bind(id)
        .execute(c)
        .await
        .map(drop))
}

pub async fn all(tx: &mut Conn) -> Result<Vec<UserRow>, sqlx::Error> {
    let sql = format!("SELECT {USER_COLUMNS} FROM users ORDER BY username");
    on_conn!(tx, |c| sqlx::query_as(&sql).fetch_all(c).await)
}

pub async fn count(tx: &mut Conn) -> Result<i64, sqlx::Error> {
    on_conn!(tx, |c| sqlx::query_scalar("SELECT COUNT(*) FROM users").fetch_one(c).await)
}

pub async fn insert(
    tx: &mut Conn,
    username: &str,
    display_name: &str,
    email: Option<&str>,
    password_hash: &str,
    now: DateTime<Utc>,
) -> Result<i64, sqlx::Error> {
    on_conn!(tx, |c| sqlx::query_scalar(
        "INSERT INTO users (username, display_name, password_hash, created_at, updated_at, email, username_key)
         VALUES ($1, $2, $3, $4, $4, $5, $6) RETURNING id"
    )
    .bind(username)
    .bind(display_name)
    .bind(password_hash)
    .bind(now)
    .bind(email)
    .bind(domain::identity::sign_in_key(username))
    .fetch_one(c)
    .await)
}

pub async fn set_preferences(
    tx: &mut Conn,
    id: i64,
    language: &str,
    time_zone: &str,
    now: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    on_conn!(tx, |c| sqlx::query("UPDATE users SET language = $2, time_zone = $3, updated_at = $4 WHERE id = $1")
        .bind(id)
        .bind(language)
        .bind(time_zone)
        .bind(now)
        .execute(c)
        .await
        .map(drop))
}

pub async fn set_password_hash(tx: &mut Conn, id: i64, hash: &str, now: DateTime<Utc>) -> Result<(), sqlx::Error> {
    on_conn!(tx, |c| sqlx::query("UPDATE users SET password_hash = $2, updated_at = $3 WHERE id = $1")
        .bind(id)
        .bind(hash)
        .bind(now)
        .execute(c)
        .await
        .map(drop))?;
    Ok(())
}

pub async fn set_disabled_at(
    tx: &mut Conn,
    id: i64,
    disabled_at: Option<DateTime<Utc>>,
    now: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    on_conn!(tx, |c| sqlx::query("UPDATE users SET disabled_at = $2, updated_at = $3 WHERE id = $1")
        .bind(id)
        .bind(disabled_at)
        .bind(now)
        .execute(c)
        .await
        .map(drop))?;
    Ok(())
}

/// A user's organisation-wide roles (auditor, admin).
pub async fn roles(tx: &mut Conn, id: i64) -> Result<Vec<String>, sqlx::Error> {
    on_conn!(tx, |c| sqlx::query_scalar("SELECT role FROM user_roles WHERE user_id = $1 ORDER BY role")
        .bind(id)
        .fetch_all(c)
        .await)
}

/// A role in a department, with the department's name.
#[derive(Clone, Debug, sqlx::FromRow)]
pub struct MembershipRow {
    pub department_id: i64,
    pub code: String,
    pub name: String,
    pub role: String,
    pub name_en: Option<String>,
}

/// What the rows say a person holds: organisation-wide roles and memberships (a name the domain does not know
/// counts for nothing).
pub fn access_of(roles: &[String], memberships: &[MembershipRow]) -> Access {
    Access {
        roles: roles.iter().filter_map(|r| r.parse::<Role>().ok()).filter(|r| !r.is_departmental()).collect(),
        memberships: memberships
            .iter()
            .filter_map(|m| Some(Membership { department: m.code.clone(), role: m.role.parse().ok()? }))
            .collect(),
    }
}

pub async fn memberships(tx: &mut Conn, id: i64) -> Result<Vec<MembershipRow>, sqlx::Error> {
    on_conn!(tx, |c| sqlx::query_as(
        "SELECT d.id AS department_id, d.code, d.name, m.role, d.name_en FROM user_memberships m
         JOIN departments d ON d.id = m.department_id WHERE m.user_id = $1 ORDER BY d.code, m.role"
    )
    .bind(id)
    .fetch_all(c)
    .await)
}

/// A user with their roles and memberships, read in one statement: one round trip on the hot path of every
/// signed-in request, and one snapshot on both engines (roles and memberships never from different moments).
pub async fn with_access(
    tx: &mut Conn,
    id: i64,
) -> Result<Option<(UserRow, Vec<String>, Vec<MembershipRow>)>, sqlx::Error> {
    #[derive(sqlx::FromRow)]
    struct Part {
        part: String,
        id: Option<i64>,
        text1: Option<String>,
        text2: Option<String>,
        text3: Option<String>,
        text4: Option<String>,
        password_hash: Option<String>,
        disabled_at: Option<DateTime<Utc>>,
        email: Option<String>,
        language: Option<String>,
        time_zone: Option<String>,
        session_generation: Option<i64>,
        identity_issuer: Option<String>,
        provisioned_at: Option<DateTime<Utc>>,
    }
    let parts: Vec<Part> = on_conn!(tx, |c| {
        sqlx::query_as(
            "SELECT 'user' AS part, id, username AS text1, display_name AS text2, scim_id AS text3, NULL AS text4,
                password_hash, disabled_at, email, language, time_zone, session_generation, identity_issuer,
                provisioned_at
         FROM users WHERE id = $1
         UNION ALL
         SELECT 'role', NULL, role, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL
         FROM user_roles WHERE user_id = $1
         UNION ALL
         SELECT 'membership', d.id, d.code, d.name, m.role, d.name_en, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL
         FROM user_memberships m JOIN departments d ON d.id = m.department_id WHERE m.user_id = $1
         ORDER BY 1, 3, 5",
        )
        .bind(id)
        .fetch_all(c)
        .await
    })?;
    let (mut user, mut roles, mut memberships) = (None, Vec::new(), Vec::new());
    for p in parts {
        match p.part.as_str() {
            "user" => {
                user = Some(UserRow {
                    id,
                    username: p.text1.unwrap_or_default(),
                    display_name: p.text2.unwrap_or_default(),
                    password_hash: p.password_hash.unwrap_or_default(),
                    disabled_at: p.disabled_at,
                    email: p.email,
                    language: p.language.unwrap_or_default(),
                    time_zone: p.time_zone.unwrap_or_default(),
                    session_generation: p.session_generation.unwrap_or_default(),
                    identity_issuer: p.identity_issuer,
                    scim_id: p.text3,
                    provisioned_at: p.provisioned_at,
                })
            }
            "role" => roles.extend(p.text1),
            _ => memberships.push(MembershipRow {
                department_id: p.id.unwrap_or_default(),
                code: p.text1.unwrap_or_default(),
                name: p.text2.unwrap_or_default(),
                role: p.text3.unwrap_or_default(),
                name_en: p.text4,
            }),
        }
    }
    Ok(user.map(|user| (user, roles, memberships)))
}

/// Replaces what a user holds: organisation-wide roles, and `(department ID, role)` memberships; an admin's
/// review of it (`access_review_json`) is done.
pub async fn replace_access(
    tx: &mut Conn,
    id: i64,
    roles: &[&str],
    memberships: &[(i64, &str)],
) -> Result<(), sqlx::Error> {
    for table in ["user_roles", "user_memberships"] {
        let sql = format!("DELETE FROM {table} WHERE user_id = $1");
        on_conn!(tx, |c| sqlx::query(&sql).bind(id).execute(c).await.map(drop))?;
    }
    for role in roles {
        on_conn!(tx, |c| sqlx::query("INSERT INTO user_roles (user_id, role) VALUES ($1, $2)")
            .bind(id)
            .bind(*role)
            .execute(c)
            .await
            .map(drop))?;
    }
    for (department_id, role) in memberships {
        on_conn!(tx, |c| sqlx::query(
            "INSERT INTO user_memberships (user_id, department_id, role) VALUES ($1, $2, $3)"
        )
        .bind(id)
        .bind(*department_id)
        .bind(*role)
        .execute(c)
        .await
        .map(drop))?;
    }
    Ok(())
}

/// What a person held before memberships, when the upgrade left it for an admin to review (JSON: roles,
/// departments); cleared by `clear_access_review` once an admin set their memberships.
pub async fn access_review(tx: &mut Conn, id: i64) -> Result<Option<String>, sqlx::Error> {
    on_conn!(tx, |c| sqlx::query_scalar("SELECT access_review_json FROM users WHERE id = $1")
        .bind(id)
        .fetch_one(c)
        .await)
}

pub async fn clear_access_review(tx: &mut Conn, id: i64) -> Result<(), sqlx::Error> {
    on_conn!(tx, |c| sqlx::query("UPDATE users SET access_review_json = NULL WHERE id = $1")
        .bind(id)
        .execute(c)
        .await
        .map(drop))
}

/// Ends every session of the user (each is bound to the generation it was signed in under).
pub async fn end_sessions(tx: &mut Conn, id: i64) -> Result<(), sqlx::Error> {
    on_conn!(tx, |c| sqlx::query("UPDATE users SET session_generation = session_generation + 1 WHERE id = $1")
        .bind(id)
        .execute(c)
        .await
        .map(drop))
}
