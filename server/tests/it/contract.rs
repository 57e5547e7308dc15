//! Every answer of the ingestion API that a test receives is checked against the OpenAPI document the server
//! serves: its status must be declared for the operation, its content type and body must match the declared
//! schema (JSON Schema 2020-12, as OpenAPI 3.1 uses), and its declared headers must be there. The document and
//! the answers can then not drift apart unseen.
use reqwest::StatusCode;
use reqwest::header::HeaderMap;
use serde_json::{Value, json};
use std::sync::OnceLock;

fn document() -> &'static Value {
    static DOCUMENT: OnceLock<Value> = OnceLock::new();
    DOCUMENT.get_or_init(|| serde_json::to_value(server::api::document()).expect("the document is JSON"))
}

/// The document's operation for `method` and a concrete `path` (`/api/v1/operations/ORD-1` matches
/// `/api/v1/operations/{process_id}`), with its template.
fn operation(method: &str, path: &str) -> Option<(&'static str, &'static Value)> {
    let path = path.split('?').next().unwrap_or(path);
    let given: Vec<&str> = path.split('/').collect();
    document()["paths"].as_object()?.iter().find_map(|(template, item)| {
        let parts: Vec<&str> = template.split('/').collect();
        let fits = parts.len() == given.len()
            && parts.iter().zip(&given).all(|(t, g)| t.starts_with('{') && !g.is_empty() || t == g);
        fits.then(|| item.get(method.to_lowercase())).flatten().map(|op| (template.as_str(), op))
    })
}

/// Panics, naming what differs, when the answer is not one the document describes.
pub fn check(method: &str, path: &str, status: StatusCode, headers: &HeaderMap, body: &str) {
    if !path.starts_with("/api/v1/") {
        return;
    }
    let Some((template, operation)) = operation(method, path) else {
        panic!("{method} {path}: the OpenAPI document has no such operation");
    };
    let declared = &operation["responses"][status.as_str()];
    assert!(
        declared.is_object(),
        "{method} {template}: answered {status}, which the document does not declare:\n{body}"
    );
    for (name, _) in declared["headers"].as_object().into_iter().flatten() {
        // Idempotency-Replayed is only sent on a replay; other declared headers always.
        if name != "Idempotency-Replayed" {
            assert!(headers.contains_key(name.as_str()), "{method} {template} {status}: header {name} missing");
        }
    }
    let content_type = headers.get("content-type").and_then(|v| v.to_str().ok()).unwrap_or("");
    let media = content_type.split(';').next().unwrap_or("").trim();
    let Some(content) = declared["content"].get(media) else {
        let declared: Vec<&String> = declared["content"].as_object().map(|c| c.keys().collect()).unwrap_or_default();
        panic!("{method} {template} {status}: content type '{content_type}' is not declared ({declared:?})");
    };
    if !media.ends_with("json") {
        return;
    }
    let value: Value = serde_json::from_str(body)
        .unwrap_or_else(|e| panic!("{method} {template} {status}: the body is not JSON ({e}): {body}"));
    let errors = violations(&content["schema"], &value);
    assert!(
        errors.is_empty(),
        "{method} {template} {status}: the body breaks the document's schema: {errors:#?}\n{body}"
    );
}

/// What in `value` breaks `schema` (a schema of the document, whose `$ref`s point into its components).
pub fn violations(schema: &Value, value: &Value) -> Vec<String> {
    // The document's schemas travel with it as `$defs`, so that its references resolve inside one schema.
    // The answer's own object is closed here (its schema may be a part of another's `allOf`, left open there).
    let mut schema = json!({"allOf": [with_refs_into_defs(schema)], "unevaluatedProperties": false});
    schema["$defs"] = closed(&with_refs_into_defs(&document()["components"]["schemas"]));
    let validator = jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .should_validate_formats(true)
        .build(&schema)
        .expect("the document's schema compiles");
    validator.iter_errors(value).map(|e| format!("{} at {}", e, e.instance_path())).collect()
}

/// The schemas with no room for fields the document does not name (`unevaluatedProperties: false`), so that an
/// answer carrying an undocumented field fails too. A schema that is part of another's `allOf` stays open there:
/// the whole (which names every field of its parts) is closed instead.
fn closed(schemas: &Value) -> Value {
    let parts: Vec<String> = schemas
        .as_object()
        .into_iter()
        .flat_map(|all| all.values())
        .filter_map(|s| s["allOf"].as_array())
        .flatten()
        .filter_map(|part| part["$ref"].as_str().map(|r| r.trim_start_matches("#/$defs/").to_string()))
        .collect();
    let mut schemas = schemas.clone();
    for (name, schema) in schemas.as_object_mut().into_iter().flatten() {
        let is_object = schema.get("properties").is_some() || schema.get("allOf").is_some();
        if is_object && !parts.contains(name) {
            schema["unevaluatedProperties"] = json!(false);
        }
    }
    schemas
}

/// `#/components/schemas/X` becomes `#/$defs/X`.
fn with_refs_into_defs(schema: &Value) -> Value {
    match schema {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| match (k.as_str(), v.as_str()) {
                    ("$ref", Some(r)) => (k.clone(), json!(r.replace("#/components/schemas/", "#/$defs/"))),
                    _ => (k.clone(), with_refs_into_defs(v)),
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(with_refs_into_defs).collect()),
        other => other.clone(),
    }
}

/// The request body's schema of one of the document's webhooks (what Rerun Gate sends, not what it answers).
pub fn webhook_body_schema(name: &str) -> Value {
    let schema = &document()["webhooks"][name]["post"]["requestBody"]["content"]["application/json"]["schema"];
    assert!(schema.is_object(), "the document publishes the webhook {name}");
    schema.clone()
}

/// The document's schema of a component.
pub fn component(name: &str) -> Value {
    json!({"$ref": format!("#/components/schemas/{name}")})
}
