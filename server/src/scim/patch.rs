//! PATCH (RFC 7644 §3.5.2) applied to a resource as JSON: `add`, `replace` and `remove` in any case (Entra ID
//! sends `Replace`), paths with a schema's URN (`urn:…:enterprise:2.0:User:employeeNumber`), a sub-attribute
//! (`name.givenName`), a value filter (`emails[type eq "work"].value`, `members[value eq "…"]`, matched by the
//! `scim-filter` crate), and no path at all (a value object whose keys are paths). Attribute names match in any
//! case. All operations apply or none: the caller stores the result only when every one applied.
use super::error::ScimError;
use serde_json::{Map, Value};

const PATCH_SCHEMA: &str = "urn:ietf:params:scim:api:messages:2.0:PatchOp";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Add,
    Replace,
    Remove,
}

#[derive(Clone, Debug)]
pub struct PatchOp {
    pub op: Op,
    pub path: Option<String>,
    pub value: Option<Value>,
}

/// The operations of a `PatchOp` message.
pub fn operations(body: &Value) -> Result<Vec<PatchOp>, ScimError> {
    let schemas = body.get("schemas").and_then(Value::as_array);
    if !schemas.is_some_and(|s| s.iter().any(|v| v.as_str() == Some(PATCH_SCHEMA))) {
        return Err(ScimError::invalid_syntax(format!("a PATCH body names the schema {PATCH_SCHEMA}")));
    }
    let Some(list) = super::wire::get(body, "Operations").and_then(Value::as_array).filter(|l| !l.is_empty()) else {
        return Err(ScimError::invalid_syntax("a PATCH body has at least one operation in \"Operations\""));
    };
    list.iter()
        .map(|item| {
            let op = match super::wire::get(item, "op").and_then(Value::as_str).map(str::to_ascii_lowercase).as_deref()
            {
                Some("add") => Op::Add,
                Some("replace") => Op::Replace,
                Some("remove") => Op::Remove,
                other => return Err(ScimError::invalid_syntax(format!("unknown PATCH op {other:?}"))),
            };
            let path = super::wire::get(item, "path").and_then(Value::as_str).map(str::to_string);
            let value = super::wire::get(item, "value").cloned();
            if op == Op::Remove && path.is_none() {
                return Err(ScimError::new(
                    axum::http::StatusCode::BAD_REQUEST,
                    Some("noTarget"),
                    "remove needs a path",
                ));
            }
            if op != Op::Remove && value.is_none() {
                return Err(ScimError::invalid_syntax("add and replace need a value"));
            }
            // A value filter is parsed now, before the write: a bad one is refused without waiting for the writer.
            if let Some(filter) = path.as_deref().filter(|p| p.contains('[')).map(|p| parse_path(p, "")).transpose()?
                && let Some(filter) = &filter.filter
            {
                super::filter::parse(filter)?;
            }
            Ok(PatchOp { op, path, value })
        })
        .collect()
}

/// A path, taken apart: the extension it is in (none: the core schema), the attribute, a value filter, a
/// sub-attribute.
#[derive(Debug, PartialEq, Eq)]
struct Path {
    extension: Option<String>,
    attr: String,
    filter: Option<String>,
    sub: Option<String>,
}

fn parse_path(path: &str, core: &str) -> Result<Path, ScimError> {
    let bad = || ScimError::invalid_path(format!("'{path}' is not an attribute path"));
    let path = path.trim();
    let head_end = path.find('[').unwrap_or(path.len());
    let (extension, rest) = match path[..head_end].rfind(':') {
        Some(at) if path.to_ascii_lowercase().starts_with("urn:") => {
            let urn = &path[..at];
            let extension = (!urn.eq_ignore_ascii_case(core)).then(|| urn.to_string());
            (extension, &path[at + 1..])
        }
        _ => (None, path),
    };
    let (attr, filter, sub) = match rest.find('[') {
        Some(open) => {
            let close = rest.rfind(']').filter(|c| *c > open).ok_or_else(bad)?;
            let sub = rest[close + 1..].strip_prefix('.').map(str::to_string);
            if sub.is_none() && close + 1 != rest.len() {
                return Err(bad());
            }
            (&rest[..open], Some(rest[open + 1..close].to_string()), sub)
        }
        None => match rest.split_once('.') {
            Some((attr, sub)) => (attr, None, Some(sub.to_string())),
            None => (rest, None, None),
        },
    };
    let name_ok = |n: &str| !n.is_empty() && n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$');
    if !name_ok(attr) || sub.as_deref().is_some_and(|s| !name_ok(s)) {
        return Err(bad());
    }
    Ok(Path { extension, attr: attr.to_string(), filter, sub })
}

/// Applies every operation to `resource` (an object), or fails at the first that cannot apply.
pub fn apply(resource: &mut Value, ops: &[PatchOp], core: &str) -> Result<(), ScimError> {
    for op in ops {
        match (&op.path, &op.value) {
            (Some(urn), Some(Value::Object(inner))) if is_schema_urn(urn) && !urn.eq_ignore_ascii_case(core) => {
                for (attr, v) in inner {
                    let path = Path { extension: Some(urn.clone()), attr: attr.clone(), filter: None, sub: None };
                    apply_one(resource, op.op, &path, Some(v))?;
                }
            }
            (Some(urn), None) if op.op == Op::Remove && is_schema_urn(urn) => {
                if let Some(map) = resource.as_object_mut() {
                    let key = key_of(map, urn);
                    map.remove(&key);
                }
            }
            (Some(path), value) => apply_one(resource, op.op, &parse_path(path, core)?, value.as_ref())?,
            (None, Some(Value::Object(values))) => {
                for (key, value) in values {
                    match value {
                        // A schema's URN (its last part names a resource type, `…:2.0:User`) with its attributes.
                        Value::Object(inner) if is_schema_urn(key) && !key.eq_ignore_ascii_case(core) => {
                            for (attr, v) in inner {
                                let path =
                                    Path { extension: Some(key.clone()), attr: attr.clone(), filter: None, sub: None };
                                apply_one(resource, op.op, &path, Some(v))?;
                            }
                        }
                        _ => apply_one(resource, op.op, &parse_path(key, core)?, Some(value))?,
                    }
                }
            }
            (None, _) => return Err(ScimError::invalid_syntax("an operation without a path needs an object value")),
        }
    }
    Ok(())
}

/// `urn:…:2.0:User`: a schema, not an attribute path (attribute names start with a small letter).
fn is_schema_urn(key: &str) -> bool {
    key.to_ascii_lowercase().starts_with("urn:")
        && key.rsplit(':').next().and_then(|last| last.chars().next()).is_some_and(|c| c.is_ascii_uppercase())
}

/// The key of `map` that is `name` in any case, if there is one.
fn key_of(map: &Map<String, Value>, name: &str) -> String {
    map.keys().find(|k| k.eq_ignore_ascii_case(name)).cloned().unwrap_or_else(|| name.to_string())
}

fn apply_one(resource: &mut Value, op: Op, path: &Path, value: Option<&Value>) -> Result<(), ScimError> {
    let root = resource.as_object_mut().ok_or_else(|| ScimError::invalid_syntax("the resource is not an object"))?;
    let target = match &path.extension {
        None => root,
        Some(urn) => {
            let key = key_of(root, urn);
            if op == Op::Remove && !root.contains_key(&key) {
                return Ok(());
            }
            let entry = root.entry(key).or_insert_with(|| Value::Object(Map::new()));
            entry.as_object_mut().ok_or_else(|| ScimError::invalid_path(format!("{urn} is not an object")))?
        }
    };
    let key = key_of(target, &path.attr);
    match (&path.filter, &path.sub) {
        (None, None) => whole(target, key, op, value),
        (None, Some(sub)) => {
            let present = target.contains_key(&key);
            match target.get_mut(&key) {
                Some(Value::Array(items)) if op == Op::Remove => {
                    items.iter_mut().filter_map(Value::as_object_mut).for_each(|item| {
                        let sub = key_of(item, sub);
                        item.remove(&sub);
                    });
                    Ok(())
                }
                _ if op == Op::Remove && !present => Ok(()),
                _ => {
                    let parent = target.entry(key.clone()).or_insert_with(|| Value::Object(Map::new()));
                    let parent = parent
                        .as_object_mut()
                        .ok_or_else(|| ScimError::invalid_path(format!("{key} has no sub-attribute {sub}")))?;
                    let sub = key_of(parent, sub);
                    whole(parent, sub, op, value)
                }
            }
        }
        (Some(filter), sub) => filtered(target, key, (filter, sub.as_deref()), op, value),
    }
}

/// An operation on a whole attribute.
fn whole(target: &mut Map<String, Value>, key: String, op: Op, value: Option<&Value>) -> Result<(), ScimError> {
    match (op, value, target.get_mut(&key)) {
        (Op::Remove, Some(Value::Array(gone)), Some(Value::Array(items))) => {
            // Entra ID removes members as `path: "members"` with the values to remove.
            let gone: Vec<&Value> = gone.iter().filter_map(|g| g.get("value")).collect();
            items.retain(|item| !item.get("value").is_some_and(|v| gone.contains(&v)));
        }
        (Op::Remove, _, _) => {
            target.remove(&key);
        }
        (Op::Add, Some(Value::Array(new)), Some(Value::Array(items))) => {
            for item in new {
                let same = |i: &Value| i == item || (i.get("value").is_some() && i.get("value") == item.get("value"));
                if !items.iter().any(same) {
                    items.push(item.clone());
                }
            }
        }
        (Op::Add, Some(Value::Object(new)), Some(Value::Object(existing))) => {
            for (k, v) in new {
                let k = key_of(existing, k);
                existing.insert(k, v.clone());
            }
        }
        (_, Some(value), _) => {
            target.insert(key, value.clone());
        }
        (_, None, _) => return Err(ScimError::invalid_syntax("add and replace need a value")),
    }
    Ok(())
}

/// An operation on the elements of a multi-valued attribute that a value filter selects.
fn filtered(
    target: &mut Map<String, Value>,
    key: String,
    (filter, sub): (&str, Option<&str>),
    op: Op,
    value: Option<&Value>,
) -> Result<(), ScimError> {
    let items = match target.get_mut(&key) {
        Some(Value::Array(items)) => items,
        None if op == Op::Remove => return Ok(()),
        None => target
            .entry(key.clone())
            .or_insert_with(|| Value::Array(Vec::new()))
            .as_array_mut()
            .unwrap_or_else(|| unreachable!("just inserted as an array")),
        Some(_) => return Err(ScimError::invalid_path(format!("{key} is not multi-valued"))),
    };
    let parsed = super::filter::parse(filter)?;
    let selected: Vec<usize> = (0..items.len()).filter(|at| parsed.matches(&items[*at])).collect();
    match (op, sub) {
        (Op::Remove, None) => {
            let mut at = 0;
            items.retain(|_| {
                at += 1;
                !selected.contains(&(at - 1))
            });
        }
        (Op::Remove, Some(sub)) => {
            for at in selected {
                if let Some(item) = items[at].as_object_mut() {
                    let sub = key_of(item, sub);
                    item.remove(&sub);
                }
            }
        }
        (_, sub) => {
            let value = value.ok_or_else(|| ScimError::invalid_syntax("add and replace need a value"))?;
            if selected.is_empty() {
                // Entra ID replaces `emails[type eq "work"].value` on a person with no work address yet: made.
                let mut made = equality(filter)
                    .ok_or_else(|| ScimError::new(axum::http::StatusCode::BAD_REQUEST, Some("noTarget"), filter))?;
                set(&mut made, sub, value);
                items.push(Value::Object(made));
                return Ok(());
            }
            for at in selected {
                if let Some(item) = items[at].as_object_mut() {
                    set(item, sub, value);
                }
            }
        }
    }
    Ok(())
}

fn set(item: &mut Map<String, Value>, sub: Option<&str>, value: &Value) {
    match (sub, value) {
        (Some(sub), _) => {
            let sub = key_of(item, sub);
            item.insert(sub, value.clone());
        }
        (None, Value::Object(fields)) => {
            for (k, v) in fields {
                let k = key_of(item, k);
                item.insert(k, v.clone());
            }
        }
        (None, _) => {
            item.insert("value".into(), value.clone());
        }
    }
}

/// `type eq "work"` as the element it describes, `{"type": "work"}`; other filters describe no one element.
fn equality(filter: &str) -> Option<Map<String, Value>> {
    let (attr, rest) = filter.trim().split_once(' ')?;
    let (op, literal) = rest.trim().split_once(' ')?;
    let literal: Value = serde_json::from_str(literal.trim()).ok()?;
    (op.eq_ignore_ascii_case("eq") && !attr.contains('.')).then(|| Map::from_iter([(attr.to_string(), literal)]))
}

#[cfg(test)]
mod tests;
