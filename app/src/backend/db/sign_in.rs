//! Failed sign-in attempts, counted per account and per client address for throttling.
use super::{Conn, on_conn};
use chrono::{DateTime, Utc};

pub async fn record_failure(tx: &mut Conn, username: &str, ip: &str, now: DateTime<Utc>) -> Result<(), sqlx::Error> {
    on_conn!(tx, |c| sqlx::query("INSERT INTO sign_in_failures (username, ip, at) VALUES ($1, $2, $3)")
        .bind(username)
        .bind(ip)
        .bind(now)
        .execute(c)
        .await
        .map(drop))?;
    Ok(())
}

/// Failures since `since` for this account and for this address.
pub async fn recent_failures(
    tx: &mut Conn,
    username: &str,
    ip: &str,
    since: DateTime<Utc>,
) -> Result<(i64, i64), sqlx::Error> {
    let by_user: i64 =
        on_conn!(tx, |c| sqlx::query_scalar("SELECT COUNT(*) FROM sign_in_failures WHERE username = $1 AND at > $2")
            .bind(username)
            .bind(since)
            .fetch_one(c)
            .await)?;
    let by_ip: i64 =
        on_conn!(tx, |c| sqlx::query_scalar("SELECT COUNT(*) FROM sign_in_failures WHERE ip = $1 AND at > $2")
            .bind(ip)
            .bind(since)
            .fetch_one(c)
            .await)?;
    Ok((by_user, by_ip))
}

/// A successful sign-in clears the account's failures; old rows of everyone are dropped on the way.
pub async fn forget(tx: &mut Conn, username: &str, older_than: DateTime<Utc>) -> Result<(), sqlx::Error> {
    on_conn!(tx, |c| sqlx::query("DELETE FROM sign_in_failures WHERE username = $1 OR at < $2")
        .bind(username)
        .bind(older_than)
        .execute(c)
        .await
        .map(drop))?;
    Ok(())
}

/// The key of the hash an unknown name leaves in the trail: the stored one, or `fresh` when there is none yet
/// (the first instance to write it wins; the others read its key).
pub async fn name_key(tx: &mut Conn, fresh: &str) -> Result<String, sqlx::Error> {
    on_conn!(tx, |c| sqlx::query(
        "INSERT INTO instance_keys (name, key_hex) VALUES ('audit_name', $1) ON CONFLICT (name) DO NOTHING"
    )
    .bind(fresh)
    .execute(c)
    .await
    .map(drop))?;
    on_conn!(tx, |c| sqlx::query_scalar("SELECT key_hex FROM instance_keys WHERE name = 'audit_name'")
        .fetch_one(c)
        .await)
}
