//! People: adding, listing, disabling, roles and memberships, passwords. Admin-only except one's own password.
use super::Caller;
use super::audit::record;
use super::session_users::{SessionUser, load_session_user};
use crate::{AppState, db, passwords};
use contract::admin::{NewUser, UserSummary};
use contract::{AppError, DepartmentDto};
use domain::audit::{Actor, AuditEntry, ObjectType};
use domain::audit_action::AuditAction;
use domain::conflict::Conflict;
use domain::directory::UserSource;
use domain::identity::Authentication;
use domain::ids::{DepartmentCode, EmailAddress, Username};
use domain::invalid::{Field, Invalid, Rule};
use domain::membership::{Access, Membership};
use domain::password_policy::check_new_password;
use domain::preferences;
use domain::rights;
use domain::roles::Role;
use domain::throttle::address_key;
use serde_json::json;

/// A new user, checked: every field parsed, the departments known.
struct CheckedUser {
    username: Username,
    display_name: String,
    email: Option<EmailAddress>,
    access: Access,
}

fn check_user_fields(new: &NewUser) -> Result<CheckedUser, AppError> {
    let mut errors = Vec::new();
    let username = Username::parse(&new.username).map_err(|m| errors.push(field(Field::Username, m))).ok();
    let display_name = new.display_name.trim().to_string();
    if display_name.is_empty() || display_name.chars().count() > 100 {
        let rule = if display_name.is_empty() { Rule::Required } else { Rule::TooLong };
        errors.push(field(Field::DisplayName, Invalid::new(rule, "the display name must be 1 to 100 characters")));
    }
    let email = match new.email.trim() {
        "" => None,
        given => EmailAddress::parse(given).map_err(|m| errors.push(field(Field::Email, m))).ok(),
    };
    if let Err(m) = check_new_password(&new.password, &new.username) {
        errors.push(field(Field::Password, m));
    }
    let access = match check_access(&new.roles, &new.departments, &new.memberships) {
        Ok(checked) => checked,
        Err(AppError::Validation(mut list)) => {
            errors.append(&mut list);
            Default::default()
        }
        Err(other) => return Err(other),
    };
    match (errors.is_empty(), username) {
        (true, Some(username)) => Ok(CheckedUser { username, display_name, email, access }),
        _ => Err(AppError::Validation(errors)),
    }
}

fn field(name: Field, problem: impl Into<Invalid>) -> contract::FieldError {
    let Invalid { rule, message } = problem.into();
    contract::FieldError { field: name, message, rule: Some(rule) }
}

/// What a person is given, checked: the pairs of `roles` × `departments` (one grant, as `server user add --role
/// --department` gives them) beside the memberships given one by one; at least one role, staff and managers in
/// at least one department, the codes well formed.
fn check_access(roles: &[Role], departments: &[String], memberships: &[Membership]) -> Result<Access, AppError> {
    let mut errors = Vec::new();
    let mut code = |raw: &str| match DepartmentCode::parse(raw) {
        Ok(code) => Some(code.as_str().to_string()),
        Err(m) => {
            errors.push(field(Field::Departments, m));
            None
        }
    };
    let codes: Vec<String> = departments.iter().filter_map(|d| code(d)).collect();
    let given: Vec<Membership> = memberships
        .iter()
        .filter_map(|m| Some(Membership { department: code(&m.department)?, role: m.role }))
        .collect();
    if given.iter().any(|m| !m.role.is_departmental()) {
        let why = "auditor and admin are held in the whole organisation, not in a department";
        errors.push(field(Field::Memberships, Invalid::new(Rule::Unknown, why)));
    }
    if roles.is_empty() && given.is_empty() {
        errors.push(field(Field::Roles, Invalid::new(Rule::NoneChosen, "choose at least one role")));
    }
    if roles.iter().any(|r| r.is_departmental()) && codes.is_empty() {
        let why = "staff and managers belong to at least one department";
        errors.push(field(Field::Departments, Invalid::new(Rule::NoneChosen, why)));
    }
    if !errors.is_empty() {
        return Err(AppError::Validation(errors));
    }
    Ok(Access::granted(roles, &codes)
        .with(Access { roles: Default::default(), memberships: given.into_iter().collect() }))
}

/// Stores what a person holds (organisation-wide roles, memberships by department), in the caller's
/// transaction; an unknown department is refused.
pub(super) async fn store_access(tx: &mut db::Conn, id: i64, access: &Access) -> Result<(), AppError> {
    let codes = access.departments();
    let found = db::departments::by_codes(tx, &codes).await?;
    if let Some(missing) = codes.iter().find(|c| !found.iter().any(|d| &d.code == *c)) {
        return Err(AppError::invalid(
            Field::Departments,
            Invalid::new(Rule::Unknown, format!("there is no department '{missing}'")),
        ));
    }
    let department_id = |code: &str| found.iter().find(|d| d.code == code).map_or(0, |d| d.id);
    let memberships: Vec<(i64, &str)> =
        access.memberships.iter().map(|m| (department_id(&m.department), m.role.as_str())).collect();
    let roles: Vec<&str> = access.roles.iter().map(|r| r.as_str()).collect();
    db::users::replace_access(tx, id, &roles, &memberships).await?;
    Ok(())
}

/// Sets what a person holds as their groups say (at the company sign-in, or from the company directory), audited
/// when it changes: approvals they gave where they can no longer decide stop counting, and with no membership
/// left their chat links end. Returns whether anything changed.
pub(super) async fn bring_access_in_line(
    tx: &mut db::Conn,
    actor: &Actor,
    (id, username): (i64, &str),
    access: &Access,
    (request_id, now): (Option<&str>, chrono::DateTime<chrono::Utc>),
) -> Result<bool, AppError> {
    let before = stored_access(tx, id).await?;
    if before == *access {
        return Ok(false);
    }
    store_access(tx, id, access).await?;
    let entry = AuditEntry::new(actor.clone(), AuditAction::UserRolesChanged, ObjectType::User, id)
        .before(json!({"username": username, "roles": before.roles, "memberships": before.memberships}))
        .after(json!({"username": username, "roles": access.roles, "memberships": access.memberships}));
    record(tx, entry, request_id, now).await?;
    access_changed(tx, actor, &rights::Person { id, access: access.clone() }, (request_id, now)).await?;
    Ok(true)
}

/// What follows a change of what a person holds, on every path (the directory, the company sign-in, an admin):
/// their approvals that no longer count stop counting; with no membership left, their chat links end (nothing
/// a press there could decide).
pub(super) async fn access_changed(
    tx: &mut db::Conn,
    actor: &Actor,
    person: &rights::Person,
    (request_id, now): (Option<&str>, chrono::DateTime<chrono::Utc>),
) -> Result<(), AppError> {
    void_approvals_no_longer_held(tx, actor, person, (request_id, now)).await?;
    if person.access.memberships.is_empty() {
        super::chat::end_links(tx, actor.clone(), person.id, (request_id, now)).await?;
    }
    Ok(())
}

/// What a person holds, as stored.
pub(super) async fn stored_access(tx: &mut db::Conn, id: i64) -> Result<Access, AppError> {
    let roles = db::users::roles(tx, id).await?;
    let memberships = db::users::memberships(tx, id).await?;
    Ok(db::users::access_of(&roles, &memberships))
}

/// Adds a user on behalf of `actor` (an admin, or the system for the command line and the demo).
pub async fn add(state: &AppState, actor: Actor, request_id: Option<&str>, new: NewUser) -> Result<i64, AppError> {
    add_noting(state, actor, request_id, new, None).await
}

/// `add`, noting in the audit event how the admin who added the user authenticated.
async fn add_noting(
    state: &AppState,
    actor: Actor,
    request_id: Option<&str>,
    new: NewUser,
    decided: Option<&Authentication>,
) -> Result<i64, AppError> {
    let checked = check_user_fields(&new)?;
    let hash = passwords::hash(super::sign_in::turn(state).await?, new.password).await?;
    let now = state.clock.now();
    let mut tx = state.db.begin_write().await?;
    if db::users::by_name_as_meant(&mut tx, checked.username.as_str()).await?.is_some() {
        return Err(AppError::conflict(
            Conflict::UsernameTaken,
            format!("the sign-in name '{}' is taken", checked.username),
        ));
    }
    let email = checked.email.as_ref().map(EmailAddress::as_str);
    let id = db::users::insert(&mut tx, checked.username.as_str(), &checked.display_name, email, &hash, now).await?;
    store_access(&mut tx, id, &checked.access).await?;
    let entry = AuditEntry::new(actor, AuditAction::UserCreated, ObjectType::User, id).after(json!({
        "username": checked.username,
        "display_name": checked.display_name,
        "email": email,
        "roles": checked.access.roles,
        "memberships": checked.access.memberships,
    }));
    let entry = match decided {
        Some(authentication) => entry.authenticated(authentication),
        None => entry,
    };
    record(&mut tx, entry, request_id, now).await?;
    tx.commit().await?;
    Ok(id)
}

pub async fn add_by_admin(state: &AppState, caller: &Caller, new: NewUser) -> Result<i64, AppError> {
    caller.require(Role::Admin)?;
    let authenticated = caller.fresh_sign_in(state)?;
    add_noting(state, caller.actor(), caller.request_id.as_deref(), new, Some(authenticated)).await
}

pub async fn list(state: &AppState, caller: &Caller) -> Result<Vec<UserSummary>, AppError> {
    caller.require(Role::Admin)?;
    let mut tx = state.db.begin_read().await?;
    let mut summaries = Vec::new();
    for row in db::users::all(&mut tx).await? {
        let access = stored_access(&mut tx, row.id).await?;
        let review = db::users::access_review(&mut tx, row.id).await?;
        let source = UserSource::of(row.is_provisioned(), row.identity_issuer.is_some());
        summaries.push(UserSummary {
            id: row.id,
            username: row.username,
            display_name: row.display_name,
            departments: access.departments(),
            roles: access.roles.into_iter().collect(),
            memberships: access.memberships.into_iter().collect(),
            held_before: review.and_then(|json| serde_json::from_str(&json).ok()),
            disabled: row.disabled_at.is_some(),
            email: row.email,
            source,
            provisioned_at: row.provisioned_at,
        });
    }
    Ok(summaries)
}

/// Disabling ends the user's sessions for good: every request reloads the user and refuses a disabled one, and the
/// sessions' binding moves on, so re-enabling the user does not revive an old cookie.
pub async fn set_disabled(state: &AppState, caller: &Caller, user_id: i64, disabled: bool) -> Result<(), AppError> {
    caller.require(Role::Admin)?;
    if disabled && user_id == caller.user_id() {
        return Err(AppError::conflict(Conflict::SelfDisable, "you cannot disable yourself"));
    }
    let authenticated = caller.fresh_sign_in(state)?;
    let now = state.clock.now();
    let mut tx = state.db.begin_write().await?;
    let user = db::users::by_id(&mut tx, user_id).await?.ok_or(AppError::NotFound)?;
    let held = db::users::held_at(&mut tx, user_id).await?.is_some();
    if disabled {
        // A local account is disabled by admins alone; a provisioned one may be disabled by the directory too.
        if held || (user.disabled_at.is_some() && !user.is_provisioned()) {
            return Ok(());
        }
        // A hold of the admin's own: the directory's next routine update does not lift it.
        db::users::set_hold(&mut tx, user_id, Some(now)).await?;
        db::users::set_disabled_at(&mut tx, user_id, Some(now), now).await?;
        db::users::end_sessions(&mut tx, user_id).await?;
        let nobody = rights::Person { id: user_id, access: Access::default() };
        access_changed(&mut tx, &caller.actor(), &nobody, (caller.request_id.as_deref(), now)).await?;
    } else {
        if !held && user.disabled_at.is_none() {
            return Ok(());
        }
        if !held && user.is_provisioned() {
            return Err(directory_managed(&user.username));
        }
        db::users::set_hold(&mut tx, user_id, None).await?;
        // A provisioned person comes back only if the directory, too, says they are active.
        if !user.is_provisioned() || directory_active(&mut tx, &user).await? {
            db::users::set_disabled_at(&mut tx, user_id, None, now).await?;
        }
    }
    let action = if disabled { AuditAction::UserDisabled } else { AuditAction::UserEnabled };
    let entry = AuditEntry::new(caller.actor(), action, ObjectType::User, user_id)
        .before(json!({"username": user.username, "disabled": !disabled}))
        .after(json!({"username": user.username, "disabled": disabled}))
        .authenticated(authenticated);
    record(&mut tx, entry, caller.request_id.as_deref(), now).await?;
    tx.commit().await?;
    Ok(())
}

/// Whether the company directory's last word on a provisioned person is "active".
async fn directory_active(tx: &mut db::Conn, user: &db::users::UserRow) -> Result<bool, AppError> {
    let Some(scim_id) = &user.scim_id else { return Ok(true) };
    let person = db::directory::person(tx, scim_id).await?;
    let resource = person.and_then(|p| p.scim_resource_json).and_then(|j| serde_json::from_str(&j).ok());
    Ok(domain::directory::says_active(resource.as_ref()))
}

/// An admin sets what another person holds: organisation-wide roles, and memberships (given one by one, or as
/// the pairs of `roles` × `departments`). Nobody changes their own (`rights::may_change_access`).
pub async fn set_access(
    state: &AppState,
    caller: &Caller,
    user_id: i64,
    roles: Vec<Role>,
    departments: Vec<String>,
    memberships: Vec<Membership>,
) -> Result<(), AppError> {
    caller.require(Role::Admin)?;
    let access = check_access(&roles, &departments, &memberships)?;
    if !rights::may_change_access(caller.user_id(), user_id) {
        tracing::warn!(user = %caller.user().username, "an admin's change of their own roles refused");
        return Err(AppError::conflict(
            Conflict::OwnAccess,
            "your own roles and departments are changed by another admin",
        ));
    }
    let authenticated = caller.fresh_sign_in(state)?;
    let now = state.clock.now();
    let mut tx = state.db.begin_write().await?;
    let user = db::users::by_id(&mut tx, user_id).await?.ok_or(AppError::NotFound)?;
    if user.is_provisioned() {
        return Err(directory_managed(&user.username));
    }
    let before = stored_access(&mut tx, user_id).await?;
    store_access(&mut tx, user_id, &access).await?;
    db::users::clear_access_review(&mut tx, user_id).await?;
    let entry = AuditEntry::new(caller.actor(), AuditAction::UserRolesChanged, ObjectType::User, user_id)
        .before(json!({"username": user.username, "roles": before.roles, "memberships": before.memberships}))
        .after(json!({"username": user.username, "roles": access.roles, "memberships": access.memberships}))
        .authenticated(authenticated);
    record(&mut tx, entry, caller.request_id.as_deref(), now).await?;
    let person = rights::Person { id: user_id, access };
    access_changed(&mut tx, &caller.actor(), &person, (caller.request_id.as_deref(), now)).await?;
    tx.commit().await?;
    Ok(())
}

/// Changes the caller's own password; the new hash ends every other session of theirs. Returns the
/// refreshed user, to rebind the caller's own session to the new hash.
pub async fn change_own_password(
    state: &AppState,
    caller: &Caller,
    ip: &str,
    current: String,
    new: String,
) -> Result<SessionUser, AppError> {
    let me = caller.user();
    check_new_password(&new, &me.username).map_err(|m| AppError::invalid(Field::NewPassword, m))?;
    // Guessing the current password through a stolen session is throttled as sign-in is, on the same counts.
    let admitted = super::sign_in::admit(state, &me.username, (ip, None), caller.request_id.as_deref()).await?;
    let row = admitted.user.filter(|u| u.id == me.id).ok_or(AppError::Unauthorized)?;
    if !passwords::verify(admitted.turn, current, Some(row.password_hash)).await?.ok {
        return Err(AppError::invalid(
            Field::CurrentPassword,
            Invalid::new(Rule::WrongPassword, "the current password is wrong"),
        ));
    }
    let hash = passwords::hash(super::sign_in::turn(state).await?, new).await?;
    let now = state.clock.now();
    let mut tx = state.db.begin_write().await?;
    let (place, window) = (address_key(ip), chrono::Duration::minutes(domain::throttle::WINDOW_MINUTES));
    db::sign_in::forget(&mut tx, &me.username, &place, now - window).await?;
    db::users::set_password_hash(&mut tx, me.id, &hash, now).await?;
    let entry = AuditEntry::new(caller.actor(), AuditAction::UserPasswordChanged, ObjectType::User, me.id)
        .after(json!({"username": me.username}));
    record(&mut tx, entry, caller.request_id.as_deref(), now).await?;
    // A chat link made by whoever knew the old password ends with it: the owner links again.
    super::chat::end_links(&mut tx, caller.actor(), me.id, (caller.request_id.as_deref(), now)).await?;
    let row = db::users::by_id(&mut tx, me.id).await?.ok_or(AppError::Unauthorized)?;
    let refreshed = load_session_user(&mut tx, row).await?;
    tx.commit().await?;
    Ok(refreshed)
}

/// The caller ends every session of theirs (this one too) and every chat link: a lost device, a shared one left
/// signed in. One transaction with its audit events.
pub async fn sign_out_everywhere(state: &AppState, caller: &Caller) -> Result<(), AppError> {
    let now = state.clock.now();
    let mut tx = state.db.begin_write().await?;
    db::users::end_sessions(&mut tx, caller.user_id()).await?;
    super::chat::end_links(&mut tx, caller.actor(), caller.user_id(), (caller.request_id.as_deref(), now)).await?;
    let entry =
        AuditEntry::new(caller.actor(), AuditAction::UserSignedOutEverywhere, ObjectType::User, caller.user_id());
    record(&mut tx, entry, caller.request_id.as_deref(), now).await?;
    tx.commit().await?;
    Ok(())
}

/// The caller's own language and time zone (either may stay as it is). Returns the two now in use.
pub async fn set_preferences(
    state: &AppState,
    caller: &Caller,
    language: Option<&str>,
    time_zone: Option<&str>,
) -> Result<(&'static str, &'static str), AppError> {
    let me = caller.user();
    let language =
        preferences::language(language.unwrap_or(&me.language)).map_err(|m| AppError::invalid(Field::Language, m))?;
    let zone = preferences::time_zone(time_zone.unwrap_or(&me.time_zone))
        .map_err(|m| AppError::invalid(Field::TimeZone, m))?;
    let now = state.clock.now();
    let mut tx = state.db.begin_write().await?;
    db::users::set_preferences(&mut tx, me.id, language, zone.name(), now).await?;
    let entry = AuditEntry::new(caller.actor(), AuditAction::UserPreferencesChanged, ObjectType::User, me.id)
        .before(json!({"language": me.language, "time_zone": me.time_zone}))
        .after(json!({"language": language, "time_zone": zone.name()}));
    record(&mut tx, entry, caller.request_id.as_deref(), now).await?;
    tx.commit().await?;
    Ok((language, zone.name()))
}

pub async fn departments(state: &AppState, caller: &Caller) -> Result<Vec<DepartmentDto>, AppError> {
    caller.require(Role::Admin)?;
    let mut tx = state.db.begin_read().await?;
    let rows = db::departments::all(&mut tx).await?;
    Ok(rows.into_iter().map(|d| DepartmentDto { code: d.code, name: d.name, name_en: d.name_en }).collect())
}

/// The refusal of an admin's change to what the company directory owns.
fn directory_managed(username: &str) -> AppError {
    AppError::conflict(
        Conflict::DirectoryManaged,
        format!("the company directory manages {username}: change their groups or their account there"),
    )
}

/// After a person's access changed (the directory removed them, an admin disabled them or changed their
/// memberships): each approval they gave to a request or bulk rerun that still waits, in a department where they
/// can no longer decide, stops counting (`domain::directory::approval_still_counts`), each with its audit event,
/// in the caller's transaction. The request waits for another approver; its page says why.
async fn void_approvals_no_longer_held(
    tx: &mut crate::db::Conn,
    actor: &domain::audit::Actor,
    giver: &domain::rights::Person,
    (request_id, now): (Option<&str>, chrono::DateTime<chrono::Utc>),
) -> Result<usize, AppError> {
    use crate::db;
    use domain::audit::{AuditEntry, ObjectType};
    use domain::audit_action::AuditAction;
    use domain::chat::ChatSubject;
    use domain::directory::approval_still_counts;
    use domain::reasons::SystemReason;
    let why = SystemReason::GiverAccessEnded.text();
    let mut voided = 0;
    for (request, process_id, department) in db::rerun_requests::waiting_approvals_by(tx, giver.id).await? {
        if approval_still_counts(giver, &department) {
            continue;
        }
        db::rerun_requests::void_approval(tx, &request, giver.id, &why, now).await?;
        let entry =
            AuditEntry::new(actor.clone(), AuditAction::RerunRequestApprovalVoided, ObjectType::Operation, &process_id)
                .department(Some(&department))
                .after(serde_json::json!({"rerun_id": request, "approver_id": giver.id}))
                .reason(&why);
        super::audit::record(tx, entry, request_id, now).await?;
        super::chat::changed(tx, &ChatSubject::Request(request), now).await?;
        voided += 1;
    }
    for (batch, department) in db::batches::waiting_approvals_by(tx, giver.id).await? {
        if approval_still_counts(giver, &department) {
            continue;
        }
        db::batches::void_approval(tx, &batch, giver.id, &why, now).await?;
        let entry =
            AuditEntry::new(actor.clone(), AuditAction::RerunBatchApprovalVoided, ObjectType::RerunBatch, &batch)
                .department(Some(&department))
                .after(serde_json::json!({"batch_id": batch, "approver_id": giver.id}))
                .reason(&why);
        super::audit::record(tx, entry, request_id, now).await?;
        super::chat::changed(tx, &ChatSubject::Batch(batch), now).await?;
        voided += 1;
    }
    Ok(voided)
}
