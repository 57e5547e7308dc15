//! Programs that call the ingestion API (a name, the SHA-256 of their token, their departments), and the company
//! directory's provisioning (a token of its own purpose).
use super::states::Stored;
use super::{Conn, on_conn};
use chrono::{DateTime, Utc};
use domain::directory::ClientPurpose;

#[derive(Clone, Debug, sqlx::FromRow)]
pub struct ApiClientRow {
    pub id: i64,
    pub name: String,
    pub created_at: DateTime<Utc>,
    pub revoked_at: Option<DateTime<Utc>>,
    #[sqlx(try_from = "Stored<ClientPurpose>")]
    pub purpose: ClientPurpose,
}

pub async fn insert(
    tx: &mut Conn,
    name: &str,
    purpose: ClientPurpose,
    token_sha256: &str,
    now: DateTime<Utc>,
) -> Result<i64, sqlx::Error> {
    on_conn!(tx, |c| sqlx::query_scalar(
        "INSERT INTO api_clients (name, token_sha256, created_at, purpose) VALUES ($1, $2, $3, $4) RETURNING id"
    )
    .bind(name)
    .bind(token_sha256)
    .bind(now)
    .bind(Stored(purpose))
    .fetch_one(c)
    .await)
}

pub async fn add_department(tx: &mut Conn, id: i64, department_id: i64) -> Result<(), sqlx::Error> {
    on_conn!(tx, |c| sqlx::query("INSERT INTO api_client_departments (api_client_id, department_id) VALUES ($1, $2)")
        .bind(id)
        .bind(department_id)
        .execute(c)
        .await
        .map(drop))
}

pub async fn by_name(tx: &mut Conn, name: &str) -> Result<Option<ApiClientRow>, sqlx::Error> {
    on_conn!(tx, |c| sqlx::query_as(
        "SELECT id, name, created_at, revoked_at, purpose FROM api_clients WHERE name = $1"
    )
    .bind(name)
    .fetch_optional(c)
    .await)
}

/// A client's row joined with one of its departments (`None`: it has none).
type ClientAndDepartment = (i64, String, DateTime<Utc>, Option<DateTime<Utc>>, Stored<ClientPurpose>, Option<String>);

/// The client holding this token and its department codes, in one statement (it runs on every API call).
pub async fn by_token(tx: &mut Conn, token_sha256: &str) -> Result<Option<(ApiClientRow, Vec<String>)>, sqlx::Error> {
    let rows: Vec<ClientAndDepartment> = on_conn!(tx, |c| sqlx::query_as(
        "SELECT c.id, c.name, c.created_at, c.revoked_at, c.purpose, d.code FROM api_clients c
         LEFT JOIN api_client_departments a ON a.api_client_id = c.id
         LEFT JOIN departments d ON d.id = a.department_id
         WHERE c.token_sha256 = $1 ORDER BY d.code"
    )
    .bind(token_sha256)
    .fetch_all(c)
    .await)?;
    let Some((id, name, created_at, revoked_at, Stored(purpose), _)) = rows.first().cloned() else { return Ok(None) };
    let codes = rows.into_iter().filter_map(|r| r.5).collect();
    Ok(Some((ApiClientRow { id, name, created_at, revoked_at, purpose }, codes)))
}

pub async fn by_id(tx: &mut Conn, id: i64) -> Result<Option<ApiClientRow>, sqlx::Error> {
    on_conn!(tx, |c| sqlx::query_as("SELECT id, name, created_at, revoked_at, purpose FROM api_clients WHERE id = $1")
        .bind(id)
        .fetch_optional(c)
        .await)
}

pub async fn all(tx: &mut Conn) -> Result<Vec<ApiClientRow>, sqlx::Error> {
    on_conn!(tx, |c| sqlx::query_as("SELECT id, name, created_at, revoked_at, purpose FROM api_clients ORDER BY name")
        .fetch_all(c)
        .await)
}

pub async fn department_codes(tx: &mut Conn, id: i64) -> Result<Vec<String>, sqlx::Error> {
    on_conn!(tx, |c| sqlx::query_scalar(
        "SELECT d.code FROM departments d JOIN api_client_departments a ON a.department_id = d.id
         WHERE a.api_client_id = $1 ORDER BY d.code"
    )
    .bind(id)
    .fetch_all(c)
    .await)
}

pub async fn revoke(tx: &mut Conn, id: i64, now: DateTime<Utc>) -> Result<(), sqlx::Error> {
    on_conn!(tx, |c| sqlx::query("UPDATE api_clients SET revoked_at = $2 WHERE id = $1 AND revoked_at IS NULL")
        .bind(id)
        .bind(now)
        .execute(c)
        .await
        .map(drop))
}
