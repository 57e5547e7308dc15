use super::{Conn, on_conn};
use chrono::{DateTime, Utc};

#[derive(Clone, Debug, sqlx::FromRow)]
pub struct DepartmentRow {
    pub id: i64,
    pub code: String,
    pub name: String,
    pub name_en: Option<String>,
}

pub async fn insert(
    tx: &mut Conn,
    code: &str,
    (name, name_en): (&str, Option<&str>),
    now: DateTime<Utc>,
) -> Result<i64, sqlx::Error> {
    on_conn!(tx, |c| sqlx::query_scalar(
        "INSERT INTO departments (code, name, name_en, created_at) VALUES ($1, $2, $3, $4) RETURNING id"
    )
    .bind(code)
    .bind(name)
    .bind(name_en)
    .bind(now)
    .fetch_one(c)
    .await)
}

pub async fn all(tx: &mut Conn) -> Result<Vec<DepartmentRow>, sqlx::Error> {
    on_conn!(tx, |c| sqlx::query_as("SELECT id, code, name, name_en FROM departments ORDER BY code").fetch_all(c).await)
}

pub async fn count(tx: &mut Conn) -> Result<i64, sqlx::Error> {
    on_conn!(tx, |c| sqlx::query_scalar("SELECT COUNT(*) FROM departments").fetch_one(c).await)
}

pub async fn by_codes(tx: &mut Conn, codes: &[String]) -> Result<Vec<DepartmentRow>, sqlx::Error> {
    let mut found = Vec::with_capacity(codes.len());
    for code in codes {
        let row: Option<DepartmentRow> =
            on_conn!(tx, |c| sqlx::query_as("SELECT id, code, name, name_en FROM departments WHERE code = $1")
                .bind(code)
                .fetch_optional(c)
                .await)?;
        found.extend(row);
    }
    Ok(found)
}

pub async fn rename(tx: &mut Conn, id: i64, (name, name_en): (&str, Option<&str>)) -> Result<(), sqlx::Error> {
    on_conn!(tx, |c| sqlx::query("UPDATE departments SET name = $2, name_en = $3 WHERE id = $1")
        .bind(id)
        .bind(name)
        .bind(name_en)
        .execute(c)
        .await
        .map(drop))
}
