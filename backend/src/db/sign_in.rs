//! Failed sign-in attempts, counted per account and per client address for throttling.
use super::{Conn, on_conn};
use chrono::{DateTime, Utc};
use domain::throttle::Failures;

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

/// Failures since `since`: of this account from this address (how many, the latest), from this address, and
/// the other addresses this account failed from.
pub async fn recent_failures(
    tx: &mut Conn,
    username: &str,
    ip: &str,
    since: DateTime<Utc>,
) -> Result<Failures, sqlx::Error> {
    let (here, latest_here): (i64, Option<DateTime<Utc>>) = on_conn!(tx, |c| sqlx::query_as(
        "SELECT COUNT(*), MAX(at) FROM sign_in_failures WHERE username = $1 AND ip = $2 AND at > $3"
    )
    .bind(username)
    .bind(ip)
    .bind(since)
    .fetch_one(c)
    .await)?;
    let from_place: i64 =
        on_conn!(tx, |c| sqlx::query_scalar("SELECT COUNT(*) FROM sign_in_failures WHERE ip = $1 AND at > $2")
            .bind(ip)
            .bind(since)
            .fetch_one(c)
            .await)?;
    let other_places: i64 = on_conn!(tx, |c| sqlx::query_scalar(
        "SELECT COUNT(DISTINCT ip) FROM sign_in_failures WHERE username = $1 AND ip <> $2 AND at > $3"
    )
    .bind(username)
    .bind(ip)
    .bind(since)
    .fetch_one(c)
    .await)?;
    let of_account: i64 =
        on_conn!(tx, |c| sqlx::query_scalar("SELECT COUNT(*) FROM sign_in_failures WHERE username = $1 AND at > $2")
            .bind(username)
            .bind(since)
            .fetch_one(c)
            .await)?;
    Ok(Failures { here, latest_here, from_place, other_places, of_account })
}

/// A successful sign-in clears the account's failures from its own place (a stranger's elsewhere stay, so that
/// the owner's sign-in gives them no fresh guesses); old rows of everyone are dropped on the way.
pub async fn forget(tx: &mut Conn, username: &str, ip: &str, older_than: DateTime<Utc>) -> Result<(), sqlx::Error> {
    on_conn!(tx, |c| sqlx::query("DELETE FROM sign_in_failures WHERE (username = $1 AND ip = $2) OR at < $3")
        .bind(username)
        .bind(ip)
        .bind(older_than)
        .execute(c)
        .await
        .map(drop))?;
    Ok(())
}

/// The key of the hash an unknown name leaves in the trail: the stored one, or `fresh` when there is none yet
/// (the first instance to write it wins; the others read its key).
pub async fn name_key(tx: &mut Conn, fresh: &str) -> Result<String, sqlx::Error> {
    instance_key(tx, "audit_name", fresh).await
}

/// The installation's key for device cookies (`domain::throttle::device_token`), made from `fresh` the first time.
pub async fn device_key(tx: &mut Conn, fresh: &str) -> Result<String, sqlx::Error> {
    instance_key(tx, "device", fresh).await
}

async fn instance_key(tx: &mut Conn, name: &str, fresh: &str) -> Result<String, sqlx::Error> {
    on_conn!(tx, |c| sqlx::query(
        "INSERT INTO instance_keys (name, key_hex) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING"
    )
    .bind(name)
    .bind(fresh)
    .execute(c)
    .await
    .map(drop))?;
    on_conn!(tx, |c| sqlx::query_scalar("SELECT key_hex FROM instance_keys WHERE name = $1")
        .bind(name)
        .fetch_one(c)
        .await)
}
