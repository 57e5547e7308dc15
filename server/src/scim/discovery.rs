//! What a directory asks before it provisions (RFC 7644 §4): what this server supports, its resource types, and
//! the schemas of the attributes it keeps. The schemas list exactly what `wire` accepts.
use super::wire::{ENTERPRISE_SCHEMA, GROUP_SCHEMA, USER_SCHEMA};
use serde_json::{Value, json};

pub fn service_provider_config(base: &str) -> Value {
    json!({
        "schemas": ["urn:ietf:params:scim:schemas:core:2.0:ServiceProviderConfig"],
        "documentationUri": format!("{base}/../../guide/en#directory"),
        "patch": {"supported": true},
        "bulk": {"supported": false, "maxOperations": 0, "maxPayloadSize": 0},
        "filter": {"supported": true, "maxResults": super::MAX_RESULTS},
        "changePassword": {"supported": false},
        "sort": {"supported": false},
        "etag": {"supported": false},
        "authenticationSchemes": [{
            "type": "oauthbearertoken",
            "name": "Bearer token",
            "description": "The directory's token, from `server scim token create`",
            "primary": true,
        }],
        "meta": {"resourceType": "ServiceProviderConfig", "location": format!("{base}/ServiceProviderConfig")},
    })
}

pub fn resource_types(base: &str) -> Vec<Value> {
    vec![
        json!({
            "schemas": ["urn:ietf:params:scim:schemas:core:2.0:ResourceType"],
            "id": "User", "name": "User", "endpoint": "/Users", "schema": USER_SCHEMA,
            "schemaExtensions": [{"schema": ENTERPRISE_SCHEMA, "required": false}],
            "meta": {"resourceType": "ResourceType", "location": format!("{base}/ResourceTypes/User")},
        }),
        json!({
            "schemas": ["urn:ietf:params:scim:schemas:core:2.0:ResourceType"],
            "id": "Group", "name": "Group", "endpoint": "/Groups", "schema": GROUP_SCHEMA,
            "meta": {"resourceType": "ResourceType", "location": format!("{base}/ResourceTypes/Group")},
        }),
    ]
}

/// An attribute's definition; `kind` is the SCIM type (`string`, `boolean`, `complex`, `reference`).
fn attribute(name: &str, kind: &str, multi: bool, mutability: &str) -> Value {
    json!({
        "name": name, "type": kind, "multiValued": multi, "required": false, "caseExact": false,
        "mutability": mutability, "returned": "default", "uniqueness": "none",
    })
}

fn string(name: &str) -> Value {
    attribute(name, "string", false, "readWrite")
}

fn with(mut attr: Value, key: &str, value: Value) -> Value {
    attr[key] = value;
    attr
}

/// A multi-valued attribute of `value`, `display`, `type` (one of `types`) and `primary`.
fn typed_list(name: &str, types: &[&str]) -> Value {
    let sub = vec![
        string("value"),
        string("display"),
        with(string("type"), "canonicalValues", json!(types)),
        attribute("primary", "boolean", false, "readWrite"),
    ];
    with(attribute(name, "complex", true, "readWrite"), "subAttributes", json!(sub))
}

fn user_schema() -> Value {
    let name = ["formatted", "familyName", "givenName", "middleName", "honorificPrefix", "honorificSuffix"];
    let group_ref = with(attribute("$ref", "reference", false, "readOnly"), "referenceTypes", json!(["Group"]));
    let groups = vec![
        attribute("value", "string", false, "readOnly"),
        group_ref,
        attribute("display", "string", false, "readOnly"),
    ];
    let attributes = vec![
        with(with(string("userName"), "required", json!(true)), "uniqueness", json!("server")),
        with(attribute("name", "complex", false, "readWrite"), "subAttributes", json!(name.map(string))),
        string("displayName"),
        string("nickName"),
        attribute("profileUrl", "reference", false, "readWrite"),
        string("title"),
        string("userType"),
        string("preferredLanguage"),
        string("locale"),
        string("timezone"),
        attribute("active", "boolean", false, "readWrite"),
        with(attribute("password", "string", false, "writeOnly"), "returned", json!("never")),
        typed_list("emails", &["work", "home", "other"]),
        typed_list("phoneNumbers", &["work", "home", "mobile", "fax", "pager", "other"]),
        typed_list("roles", &["WindowsAzureActiveDirectoryRole"]),
        with(attribute("groups", "complex", true, "readOnly"), "subAttributes", json!(groups)),
    ];
    schema(USER_SCHEMA, "User", attributes)
}

fn enterprise_schema() -> Value {
    let user_ref = with(attribute("$ref", "reference", false, "readWrite"), "referenceTypes", json!(["User"]));
    let manager = vec![string("value"), user_ref, attribute("displayName", "string", false, "readOnly")];
    let attributes = vec![
        string("employeeNumber"),
        string("costCenter"),
        string("organization"),
        string("division"),
        string("department"),
        with(attribute("manager", "complex", false, "readWrite"), "subAttributes", json!(manager)),
    ];
    schema(ENTERPRISE_SCHEMA, "EnterpriseUser", attributes)
}

fn group_schema() -> Value {
    let user_ref = with(attribute("$ref", "reference", false, "immutable"), "referenceTypes", json!(["User"]));
    let member = vec![
        attribute("value", "string", false, "immutable"),
        user_ref,
        attribute("display", "string", false, "readOnly"),
        with(attribute("type", "string", false, "immutable"), "canonicalValues", json!(["User"])),
    ];
    let attributes = vec![
        with(string("displayName"), "required", json!(true)),
        with(attribute("members", "complex", true, "readWrite"), "subAttributes", json!(member)),
    ];
    schema(GROUP_SCHEMA, "Group", attributes)
}

fn schema(id: &str, name: &str, attributes: Vec<Value>) -> Value {
    json!({
        "schemas": ["urn:ietf:params:scim:schemas:core:2.0:Schema"],
        "id": id, "name": name, "attributes": attributes,
        "meta": {"resourceType": "Schema", "location": format!("/Schemas/{id}")},
    })
}

pub fn schemas() -> Vec<Value> {
    vec![user_schema(), enterprise_schema(), group_schema()]
}
