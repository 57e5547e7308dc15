//! The company directory's door: a SCIM 2.0 service provider at `/scim/v2` (RFC 7643/7644) for Microsoft Entra ID,
//! Okta, Google and OneLogin. People and groups go to `services::directory`; this module speaks the protocol:
//! discovery, lists with filters and pages, PATCH, and SCIM's error bodies. Only the directory's token opens it
//! (`server scim token create`), at the API's rates.
mod discovery;
pub mod error;
mod filter;
mod patch;
mod wire;

use crate::http::policy::route;
use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use backend::AppState;
use backend::services::directory;
use error::{Directory, SCIM_JSON, ScimError};
use serde_json::{Value, json};
use std::collections::HashMap;

/// The most resources one page of a list holds.
const MAX_RESULTS: usize = 1000;

pub fn routes(state: AppState) -> Router {
    let mut router = Router::new();
    router = route(router, Method::GET, "/scim/v2/ServiceProviderConfig", provider_config);
    router = route(router, Method::GET, "/scim/v2/ResourceTypes", resource_types);
    router = route(router, Method::GET, "/scim/v2/ResourceTypes/{id}", resource_type);
    router = route(router, Method::GET, "/scim/v2/Schemas", schemas);
    router = route(router, Method::GET, "/scim/v2/Schemas/{id}", schema);
    router = route(router, Method::GET, "/scim/v2/Users", list_people);
    router = route(router, Method::POST, "/scim/v2/Users", create_person);
    router = route(router, Method::GET, "/scim/v2/Users/{id}", get_person);
    router = route(router, Method::PUT, "/scim/v2/Users/{id}", replace_person);
    router = route(router, Method::PATCH, "/scim/v2/Users/{id}", patch_person);
    router = route(router, Method::DELETE, "/scim/v2/Users/{id}", delete_person);
    router = route(router, Method::GET, "/scim/v2/Groups", list_groups);
    router = route(router, Method::POST, "/scim/v2/Groups", create_group);
    router = route(router, Method::GET, "/scim/v2/Groups/{id}", get_group);
    router = route(router, Method::PUT, "/scim/v2/Groups/{id}", replace_group);
    router = route(router, Method::PATCH, "/scim/v2/Groups/{id}", patch_group);
    router = route(router, Method::DELETE, "/scim/v2/Groups/{id}", delete_group);
    router = route(router, Method::POST, "/scim/v2/.search", not_implemented);
    router = route(router, Method::GET, "/scim/v2/{*rest}", nothing_there);
    router.method_not_allowed_fallback(method_not_allowed).with_state(state)
}

fn base(state: &AppState) -> String {
    format!("{}/scim/v2", state.server.public_url)
}

fn answer(status: StatusCode, body: Value) -> Response {
    let mut response = (status, body.to_string()).into_response();
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static(SCIM_JSON));
    response
}

fn body_json(body: &Bytes) -> Result<Value, ScimError> {
    serde_json::from_slice(body).map_err(|e| ScimError::invalid_syntax(format!("the body is not JSON: {e}")))
}

async fn method_not_allowed() -> ScimError {
    ScimError::new(StatusCode::METHOD_NOT_ALLOWED, None, "this endpoint does not take that method")
}

/// `POST /.search`: searching by POST is not offered (filters work on GET).
async fn not_implemented(_: Directory) -> ScimError {
    ScimError::new(StatusCode::NOT_IMPLEMENTED, None, "search by POST is not supported; use GET with a filter")
}

/// Any other address under `/scim/v2`: SCIM's own 404.
async fn nothing_there(_: Directory) -> ScimError {
    ScimError::not_found()
}

async fn provider_config(_: Directory, State(state): State<AppState>) -> Response {
    answer(StatusCode::OK, discovery::service_provider_config(&base(&state)))
}

async fn resource_types(_: Directory, State(state): State<AppState>) -> Response {
    answer(StatusCode::OK, list_response(discovery::resource_types(&base(&state)), 1, usize::MAX))
}

async fn resource_type(
    _: Directory,
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Response, ScimError> {
    let found = discovery::resource_types(&base(&state)).into_iter().find(|t| t["id"] == json!(id));
    Ok(answer(StatusCode::OK, found.ok_or_else(ScimError::not_found)?))
}

async fn schemas(_: Directory) -> Response {
    answer(StatusCode::OK, list_response(discovery::schemas(), 1, usize::MAX))
}

async fn schema(_: Directory, Path(id): Path<String>) -> Result<Response, ScimError> {
    let found = discovery::schemas().into_iter().find(|s| s["id"] == json!(id));
    Ok(answer(StatusCode::OK, found.ok_or_else(ScimError::not_found)?))
}

fn list_response(resources: Vec<Value>, start: usize, count: usize) -> Value {
    let total = resources.len();
    let page: Vec<Value> = resources.into_iter().skip(start - 1).take(count).collect();
    json!({
        "schemas": ["urn:ietf:params:scim:api:messages:2.0:ListResponse"],
        "totalResults": total,
        "startIndex": start,
        "itemsPerPage": page.len(),
        "Resources": page,
    })
}

/// A list as the directory asked for it: filtered (RFC 7644 §3.4.2.2), one page of it (1-based `startIndex`,
/// `count` up to `MAX_RESULTS`), each resource with the attributes asked for.
fn listed(
    resources: Vec<Value>,
    filter: Option<&filter::Parsed>,
    query: &HashMap<String, String>,
) -> Result<Response, ScimError> {
    let number = |key: &str| -> Result<Option<i64>, ScimError> {
        query
            .get(key)
            .map(|v| v.trim().parse::<i64>())
            .transpose()
            .map_err(|_| ScimError::invalid_value(format!("{key} is a number")))
    };
    let start = number("startIndex")?.unwrap_or(1).max(1) as usize;
    let count = number("count")?.unwrap_or(100).clamp(0, MAX_RESULTS as i64) as usize;
    let mut resources = match filter {
        Some(parsed) => resources.into_iter().filter(|r| parsed.matches(r)).collect(),
        None => resources,
    };
    for resource in &mut resources {
        wire::project(resource, query.get("attributes").map(String::as_str), excluded(query));
    }
    Ok(answer(StatusCode::OK, list_response(resources, start, count)))
}

/// The list's `filter`, parsed (none given: everything).
fn filter_of(query: &HashMap<String, String>) -> Result<Option<filter::Parsed<'_>>, ScimError> {
    query.get("filter").map(|f| f.trim()).filter(|f| !f.is_empty()).map(filter::parse).transpose()
}

fn excluded(query: &HashMap<String, String>) -> Option<&str> {
    query.get("excludedAttributes").map(String::as_str)
}

fn one(mut resource: Value, status: StatusCode, query: &HashMap<String, String>) -> Response {
    wire::project(&mut resource, query.get("attributes").map(String::as_str), excluded(query));
    answer(status, resource)
}

async fn list_people(
    Directory(client): Directory,
    State(state): State<AppState>,
    Query(query): Query<HashMap<String, String>>,
) -> Result<Response, ScimError> {
    let base = base(&state);
    let filter = filter_of(&query)?;
    // A look-up of one person by name or externalId reads that person alone; `listed` still applies the filter.
    let people = match filter.as_ref().and_then(filter::Parsed::one_person) {
        Some((filter::OnePerson::UserName, name)) => {
            directory::people_named(&state, &client, (Some(name), None)).await?
        }
        Some((filter::OnePerson::ExternalId, id)) => directory::people_named(&state, &client, (None, Some(id))).await?,
        None => directory::people(&state, &client).await?,
    };
    listed(people.iter().map(|p| wire::person_json(p, &base)).collect(), filter.as_ref(), &query)
}

async fn get_person(
    Directory(client): Directory,
    State(state): State<AppState>,
    Path(id): Path<String>,
    Query(query): Query<HashMap<String, String>>,
) -> Result<Response, ScimError> {
    let person = directory::person(&state, &client, &id).await?;
    Ok(one(wire::person_json(&person, &base(&state)), StatusCode::OK, &query))
}

async fn create_person(
    Directory(client): Directory,
    State(state): State<AppState>,
    body: Bytes,
) -> Result<Response, ScimError> {
    let input = wire::person_input(body_json(&body)?)?;
    let person = directory::create_person(&state, &client, input).await?;
    Ok(created(wire::person_json(&person, &base(&state))))
}

/// 201 with the new resource, and its address (its `meta.location`) as `Location`.
fn created(resource: Value) -> Response {
    let location = resource["meta"]["location"].as_str().and_then(|l| HeaderValue::from_str(l).ok());
    let mut response = answer(StatusCode::CREATED, resource);
    if let Some(location) = location {
        response.headers_mut().insert(header::LOCATION, location);
    }
    response
}

async fn replace_person(
    Directory(client): Directory,
    State(state): State<AppState>,
    Path(id): Path<String>,
    body: Bytes,
) -> Result<Response, ScimError> {
    let input = wire::person_input(body_json(&body)?)?;
    let person = directory::update_person(&state, &client, &id, |_| Ok(input)).await?;
    Ok(answer(StatusCode::OK, wire::person_json(&person, &base(&state))))
}

async fn patch_person(
    Directory(client): Directory,
    State(state): State<AppState>,
    Path(id): Path<String>,
    body: Bytes,
) -> Result<Response, ScimError> {
    let operations = patch::operations(&body_json(&body)?)?;
    let base = base(&state);
    let mut problem = None;
    let edit = applying(&operations, (wire::USER_SCHEMA, &base), wire::person_json, wire::patched_person, &mut problem);
    let changed = directory::update_person(&state, &client, &id, edit).await;
    settled(changed, problem, |person| wire::person_json(person, &base))
}

/// A PATCH applied to what is stored, inside the service's transaction (`render` it, apply the operations, `read`
/// it back); a SCIM error on the way is kept in `problem` for the answer, and nothing is stored.
fn applying<'a, R: 'a, I: 'a>(
    operations: &'a [patch::PatchOp],
    (schema, base): (&'static str, &'a str),
    render: fn(&R, &str) -> Value,
    read: fn(&Value, Value) -> Result<I, ScimError>,
    problem: &'a mut Option<ScimError>,
) -> impl FnOnce(&R) -> Result<I, contract::AppError> + 'a {
    move |before| {
        let rendered = render(before, base);
        let mut resource = rendered.clone();
        patch::apply(&mut resource, operations, schema).and_then(|()| read(&rendered, resource)).map_err(|e| {
            let status = e.status.to_string();
            *problem = Some(e);
            contract::AppError::BadRequest(status)
        })
    }
}

/// The answer to a PATCH: the resource as it is now, or the SCIM error that stopped it.
fn settled<R>(
    changed: Result<R, contract::AppError>,
    problem: Option<ScimError>,
    render: impl Fn(&R) -> Value,
) -> Result<Response, ScimError> {
    match (changed, problem) {
        (_, Some(problem)) => Err(problem),
        (Ok(resource), None) => Ok(answer(StatusCode::OK, render(&resource))),
        (Err(error), None) => Err(error.into()),
    }
}

async fn delete_person(
    Directory(client): Directory,
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<StatusCode, ScimError> {
    directory::delete_person(&state, &client, &id).await?;
    Ok(StatusCode::NO_CONTENT)
}

async fn list_groups(
    Directory(client): Directory,
    State(state): State<AppState>,
    Query(query): Query<HashMap<String, String>>,
) -> Result<Response, ScimError> {
    let base = base(&state);
    let groups = directory::groups(&state, &client).await?;
    let filter = filter_of(&query)?;
    listed(groups.iter().map(|g| wire::group_json(g, &base)).collect(), filter.as_ref(), &query)
}

async fn get_group(
    Directory(client): Directory,
    State(state): State<AppState>,
    Path(id): Path<String>,
    Query(query): Query<HashMap<String, String>>,
) -> Result<Response, ScimError> {
    let group = directory::group(&state, &client, &id).await?;
    Ok(one(wire::group_json(&group, &base(&state)), StatusCode::OK, &query))
}

async fn create_group(
    Directory(client): Directory,
    State(state): State<AppState>,
    body: Bytes,
) -> Result<Response, ScimError> {
    let input = wire::group_input(body_json(&body)?)?;
    let group = directory::create_group(&state, &client, input).await?;
    Ok(created(wire::group_json(&group, &base(&state))))
}

async fn replace_group(
    Directory(client): Directory,
    State(state): State<AppState>,
    Path(id): Path<String>,
    body: Bytes,
) -> Result<Response, ScimError> {
    let input = wire::group_input(body_json(&body)?)?;
    let group = directory::update_group(&state, &client, &id, |_| Ok(input)).await?;
    Ok(answer(StatusCode::OK, wire::group_json(&group, &base(&state))))
}

async fn patch_group(
    Directory(client): Directory,
    State(state): State<AppState>,
    Path(id): Path<String>,
    body: Bytes,
) -> Result<Response, ScimError> {
    let operations = patch::operations(&body_json(&body)?)?;
    let base = base(&state);
    let mut problem = None;
    let read: fn(&Value, Value) -> Result<directory::GroupInput, ScimError> = |_, after| wire::group_input(after);
    let edit = applying(&operations, (wire::GROUP_SCHEMA, &base), wire::group_json, read, &mut problem);
    let changed = directory::update_group(&state, &client, &id, edit).await;
    settled(changed, problem, |group| wire::group_json(group, &base))
}

async fn delete_group(
    Directory(client): Directory,
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<StatusCode, ScimError> {
    directory::delete_group(&state, &client, &id).await?;
    Ok(StatusCode::NO_CONTENT)
}
