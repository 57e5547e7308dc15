//! SCIM resources on the wire (RFC 7643): a person and a group as JSON, read from what a directory sends
//! (attribute names in any case, Entra ID's `"False"`, nulls for unset values) and written back with `id` and
//! `meta`. A person's resource is kept as sent, so what the directory wrote reads back as it wrote it; the
//! attributes the gate uses (`userName`, `externalId`, `active`) live in its own columns and win.
use super::error::ScimError;
use backend::services::directory::{Group, GroupInput, Person, PersonInput};
use domain::directory::scim_boolean;
use serde_json::{Map, Value, json};

pub const USER_SCHEMA: &str = "urn:ietf:params:scim:schemas:core:2.0:User";
pub const GROUP_SCHEMA: &str = "urn:ietf:params:scim:schemas:core:2.0:Group";
pub const ENTERPRISE_SCHEMA: &str = "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User";

/// The core User attributes this server keeps (besides `id`, `meta`, `schemas`).
pub const USER_ATTRIBUTES: &[&str] = &[
    "externalId",
    "userName",
    "name",
    "displayName",
    "nickName",
    "profileUrl",
    "title",
    "userType",
    "preferredLanguage",
    "locale",
    "timezone",
    "active",
    "password",
    "emails",
    "phoneNumbers",
    "roles",
    "groups",
];
pub const ENTERPRISE_ATTRIBUTES: &[&str] =
    &["employeeNumber", "costCenter", "organization", "division", "department", "manager"];
const GROUP_ATTRIBUTES: &[&str] = &["externalId", "displayName", "members"];

/// `value[key]` with the key in any case (attribute names are case-insensitive).
pub fn get<'a>(value: &'a Value, key: &str) -> Option<&'a Value> {
    value.as_object()?.iter().find(|(k, _)| k.eq_ignore_ascii_case(key)).map(|(_, v)| v)
}

fn take(map: &mut Map<String, Value>, key: &str) -> Option<Value> {
    let found = map.keys().find(|k| k.eq_ignore_ascii_case(key)).cloned()?;
    map.remove(&found)
}

fn text(value: Option<Value>, what: &str) -> Result<Option<String>, ScimError> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(other) => Err(ScimError::invalid_value(format!("{what} is a string, not {other}"))),
    }
}

/// Every attribute is one this server knows: an unknown one is refused rather than silently dropped.
fn known_only(map: &Map<String, Value>, known: &[&str], extensions: &[(&str, &[&str])]) -> Result<(), ScimError> {
    for (key, value) in map {
        if ["schemas", "id", "meta"].iter().chain(known).any(|k| k.eq_ignore_ascii_case(key)) {
            continue;
        }
        let Some((_, attributes)) = extensions.iter().find(|(urn, _)| urn.eq_ignore_ascii_case(key)) else {
            return Err(ScimError::invalid_syntax(format!("unknown attribute '{key}'")));
        };
        for inner in value.as_object().map(|o| o.keys()).into_iter().flatten() {
            if !attributes.iter().any(|a| a.eq_ignore_ascii_case(inner)) {
                return Err(ScimError::invalid_syntax(format!("unknown attribute '{key}:{inner}'")));
            }
        }
    }
    Ok(())
}

fn object(resource: Value, schema: &str) -> Result<Map<String, Value>, ScimError> {
    let Value::Object(map) = resource else { return Err(ScimError::invalid_syntax("the body is not a JSON object")) };
    if let Some((_, schemas)) = map.iter().find(|(k, _)| k.eq_ignore_ascii_case("schemas")) {
        let named = schemas.as_array().is_some_and(|s| s.iter().any(|v| v.as_str() == Some(schema)));
        if !named {
            return Err(ScimError::invalid_value(format!("\"schemas\" must name {schema}")));
        }
    }
    // Unset attributes arrive as null from some directories: they are simply not there. An extension's object may
    // repeat its schema: the resource's `schemas` says it already.
    Ok(map
        .into_iter()
        .filter(|(_, v)| !v.is_null())
        .map(|(k, mut v)| {
            if let Some(inner) = v.as_object_mut().filter(|_| k.to_ascii_lowercase().starts_with("urn:")) {
                inner.remove("schemas");
                inner.retain(|_, v| !v.is_null());
            }
            (k, v)
        })
        .collect())
}

/// A person as the directory sends one (a creation, a replacement, or a PATCH's result).
pub fn person_input(resource: Value) -> Result<PersonInput, ScimError> {
    let mut map = object(resource, USER_SCHEMA)?;
    known_only(&map, USER_ATTRIBUTES, &[(ENTERPRISE_SCHEMA, ENTERPRISE_ATTRIBUTES)])?;
    let user_name = text(take(&mut map, "userName"), "userName")?
        .filter(|u| !u.trim().is_empty())
        .ok_or_else(|| ScimError::invalid_value("userName is required"))?;
    let external_id = text(take(&mut map, "externalId"), "externalId")?;
    // Kept as a boolean when given (Entra ID's "False" too).
    let active = match take(&mut map, "active") {
        None => None,
        Some(Value::Bool(b)) => Some(b),
        Some(Value::String(s)) if scim_boolean(&s).is_some() => scim_boolean(&s),
        Some(other) => return Err(ScimError::invalid_value(format!("active is true or false, not {other}"))),
    };
    if let Some(active) = active {
        map.insert("active".into(), json!(active));
    }
    // Never kept: the directory's idea of the groups (they are the groups' to say) and any password.
    for readonly_or_secret in ["id", "meta", "groups", "password", "schemas"] {
        take(&mut map, readonly_or_secret);
    }
    let resource = Value::Object(map);
    let display_name = display_name(&resource).unwrap_or_else(|| user_name.clone());
    Ok(PersonInput { email: work_email(&resource), user_name, display_name, external_id, active, resource })
}

/// A person after a PATCH (`before` as this server rendered it): `active` removed by the PATCH is unassigned,
/// which is active (RFC 7643); never said at all, it is unchanged.
pub fn patched_person(before: &Value, after: Value) -> Result<PersonInput, ScimError> {
    let mut input = person_input(after)?;
    if input.active.is_none() && before.get("active").is_some() {
        input.active = Some(true);
    }
    Ok(input)
}

/// `displayName`, else the name as written, else given and family names, in the order a Japanese reader
/// expects when both are there.
fn display_name(resource: &Value) -> Option<String> {
    fn some(v: Option<&Value>) -> Option<&str> {
        v.and_then(Value::as_str).map(str::trim).filter(|s| !s.is_empty())
    }
    if let Some(name) = some(get(resource, "displayName")) {
        return Some(name.to_string());
    }
    let name = get(resource, "name")?;
    if let Some(formatted) = some(get(name, "formatted")) {
        return Some(formatted.to_string());
    }
    let parts: Vec<&str> =
        [some(get(name, "familyName")), some(get(name, "givenName"))].into_iter().flatten().collect();
    (!parts.is_empty()).then(|| parts.join(" "))
}

/// The primary e-mail address, else the first; only one the gate could send to.
fn work_email(resource: &Value) -> Option<String> {
    let emails = get(resource, "emails")?.as_array()?;
    let primary = emails.iter().find(|e| get(e, "primary").is_some_and(|p| p == &Value::Bool(true)));
    let address = get(primary.or(emails.first())?, "value")?.as_str()?;
    domain::ids::EmailAddress::parse(address).ok().map(|_| address.to_string())
}

fn meta(
    kind: &str,
    location: String,
    created: chrono::DateTime<chrono::Utc>,
    changed: chrono::DateTime<chrono::Utc>,
) -> Value {
    json!({
        "resourceType": kind,
        "created": created.to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
        "lastModified": changed.to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
        "location": location,
        "version": format!("W/\"{}\"", changed.timestamp_micros()),
    })
}

/// A person as this server answers: the resource as kept, with the gate's own attributes.
pub fn person_json(person: &Person, base: &str) -> Value {
    let mut map = person.resource.as_object().cloned().unwrap_or_default();
    let mut schemas = vec![USER_SCHEMA];
    map.retain(|k, v| !(k.to_ascii_lowercase().starts_with("urn:") && v.as_object().is_some_and(Map::is_empty)));
    if map.keys().any(|k| k.eq_ignore_ascii_case(ENTERPRISE_SCHEMA)) {
        schemas.push(ENTERPRISE_SCHEMA);
    }
    map.insert("schemas".into(), json!(schemas));
    map.insert("id".into(), json!(person.scim_id));
    if let Some(external_id) = &person.external_id {
        map.insert("externalId".into(), json!(external_id));
    }
    map.insert("userName".into(), json!(person.user_name));
    // Said when the directory said it, and always when the person is inactive (the column decides).
    if !person.active || map.contains_key("active") {
        map.insert("active".into(), json!(person.active));
    }
    if !person.groups.is_empty() {
        let groups: Vec<Value> = person
            .groups
            .iter()
            .map(|g| json!({"value": g.scim_id, "display": g.display, "$ref": format!("{base}/Groups/{}", g.scim_id)}))
            .collect();
        map.insert("groups".into(), json!(groups));
    }
    let location = format!("{base}/Users/{}", person.scim_id);
    map.insert("meta".into(), meta("User", location, person.created_at, person.changed_at));
    Value::Object(map)
}

/// A group as the directory sends one.
pub fn group_input(resource: Value) -> Result<GroupInput, ScimError> {
    let mut map = object(resource, GROUP_SCHEMA)?;
    known_only(&map, GROUP_ATTRIBUTES, &[])?;
    let display_name = text(take(&mut map, "displayName"), "displayName")?
        .ok_or_else(|| ScimError::invalid_value("displayName is required"))?;
    let external_id = text(take(&mut map, "externalId"), "externalId")?;
    let members = match take(&mut map, "members") {
        None => Vec::new(),
        Some(Value::Array(list)) => list
            .iter()
            .map(|m| {
                get(m, "value")
                    .and_then(Value::as_str)
                    .map(str::to_string)
                    .ok_or_else(|| ScimError::invalid_value("each member has a \"value\": the person's id"))
            })
            .collect::<Result<_, _>>()?,
        Some(_) => return Err(ScimError::invalid_value("members is a list")),
    };
    Ok(GroupInput { display_name, external_id, members })
}

pub fn group_json(group: &Group, base: &str) -> Value {
    let members: Vec<Value> = group
        .members
        .iter()
        // No `display` (read-only, optional in RFC 7643): a directory's PATCH of members reads back what it sent.
        .map(|m| json!({"value": m.scim_id, "type": "User", "$ref": format!("{base}/Users/{}", m.scim_id)}))
        .collect();
    let mut map = Map::new();
    map.insert("schemas".into(), json!([GROUP_SCHEMA]));
    map.insert("id".into(), json!(group.scim_id));
    if let Some(external_id) = &group.external_id {
        map.insert("externalId".into(), json!(external_id));
    }
    map.insert("displayName".into(), json!(group.display_name));
    map.insert("members".into(), json!(members));
    let location = format!("{base}/Groups/{}", group.scim_id);
    map.insert("meta".into(), meta("Group", location, group.created_at, group.updated_at));
    Value::Object(map)
}

/// `attributes` / `excludedAttributes` (RFC 7644 §3.9): which attributes an answer carries; `id` and `schemas`
/// always. Names may carry their schema's URN and a sub-attribute; the top-level attribute decides.
pub fn project(resource: &mut Value, attributes: Option<&str>, excluded: Option<&str>) {
    let names = |list: &str| -> Vec<String> {
        list.split(',')
            .map(|n| {
                let n = n.trim();
                let n = if n.to_ascii_lowercase().starts_with("urn:") { n.rsplit(':').next().unwrap_or(n) } else { n };
                n.split('.').next().unwrap_or(n).to_ascii_lowercase()
            })
            .collect()
    };
    let Some(map) = resource.as_object_mut() else { return };
    let always = |k: &str| ["id", "schemas"].contains(&k.to_ascii_lowercase().as_str());
    if let Some(wanted) = attributes.map(names) {
        map.retain(|k, _| always(k) || wanted.contains(&k.to_ascii_lowercase()));
    } else if let Some(unwanted) = excluded.map(names) {
        map.retain(|k, _| always(k) || !unwanted.contains(&k.to_ascii_lowercase()));
    }
}
