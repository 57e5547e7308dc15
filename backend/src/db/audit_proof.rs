//! Signed checkpoints and key statements (domain::audit_proof): append-only, no update or delete here either.
use super::{Conn, on_conn};
use chrono::{DateTime, Utc};
use domain::audit_proof::{KeyStatement, SignedCheckpoint};

const CHECKPOINT_COLUMNS: &str = "seq, hash, root, at, key_id, signature, timestamp";

#[derive(sqlx::FromRow)]
struct CheckpointRow {
    seq: i64,
    hash: String,
    root: Option<String>,
    at: DateTime<Utc>,
    key_id: String,
    signature: String,
    timestamp: Option<String>,
}

impl From<CheckpointRow> for SignedCheckpoint {
    fn from(r: CheckpointRow) -> Self {
        SignedCheckpoint {
            seq: r.seq,
            hash: r.hash,
            root: r.root,
            at: r.at,
            key_id: r.key_id,
            signature: r.signature,
            timestamp: r.timestamp,
        }
    }
}

pub async fn insert_checkpoint(tx: &mut Conn, c: &SignedCheckpoint) -> Result<(), sqlx::Error> {
    let sql =
        format!("INSERT INTO audit_signed_checkpoints ({CHECKPOINT_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7)");
    on_conn!(tx, |conn| sqlx::query(&sql)
        .bind(c.seq)
        .bind(&c.hash)
        .bind(&c.root)
        .bind(c.at)
        .bind(&c.key_id)
        .bind(&c.signature)
        .bind(&c.timestamp)
        .execute(conn)
        .await
        .map(drop))
}

/// Every checkpoint at or before `seq`, in sequence order.
pub async fn checkpoints_up_to(tx: &mut Conn, seq: i64) -> Result<Vec<SignedCheckpoint>, sqlx::Error> {
    let sql = format!("SELECT {CHECKPOINT_COLUMNS} FROM audit_signed_checkpoints WHERE seq <= $1 ORDER BY seq, id");
    let rows: Vec<CheckpointRow> = on_conn!(tx, |c| sqlx::query_as(&sql).bind(seq).fetch_all(c).await)?;
    Ok(rows.into_iter().map(SignedCheckpoint::from).collect())
}

/// The newest checkpoint (the highest sequence number), by one key or by any.
pub async fn latest_checkpoint(tx: &mut Conn, key_id: Option<&str>) -> Result<Option<SignedCheckpoint>, sqlx::Error> {
    let sql = format!(
        "SELECT {CHECKPOINT_COLUMNS} FROM audit_signed_checkpoints WHERE $1 IS NULL OR key_id = $1
         ORDER BY seq DESC, id DESC LIMIT 1"
    );
    let row: Option<CheckpointRow> = on_conn!(tx, |c| sqlx::query_as(&sql).bind(key_id).fetch_optional(c).await)?;
    Ok(row.map(SignedCheckpoint::from))
}

pub async fn checkpoint_count(tx: &mut Conn) -> Result<i64, sqlx::Error> {
    on_conn!(tx, |c| sqlx::query_scalar("SELECT COUNT(*) FROM audit_signed_checkpoints").fetch_one(c).await)
}

pub async fn insert_statement(tx: &mut Conn, s: &KeyStatement) -> Result<(), sqlx::Error> {
    on_conn!(tx, |c| {
        sqlx::query(
            "INSERT INTO audit_key_statements
             (old_key, new_key, at, new_signature, old_signature, vouched_seq, vouched_hash)
         VALUES ($1, $2, $3, $4, $5, $6, $7)",
        )
        .bind(&s.old_key)
        .bind(&s.new_key)
        .bind(s.at)
        .bind(&s.new_signature)
        .bind(&s.old_signature)
        .bind(s.vouched.as_ref().map(|v| v.0))
        .bind(s.vouched.as_ref().map(|v| v.1.as_str()))
        .execute(c)
        .await
        .map(drop)
    })
}

#[derive(sqlx::FromRow)]
struct StatementRow {
    old_key: String,
    new_key: String,
    at: DateTime<Utc>,
    new_signature: String,
    old_signature: Option<String>,
    vouched_seq: Option<i64>,
    vouched_hash: Option<String>,
}

pub async fn statements(tx: &mut Conn) -> Result<Vec<KeyStatement>, sqlx::Error> {
    let sql = "SELECT old_key, new_key, at, new_signature, old_signature, vouched_seq, vouched_hash
               FROM audit_key_statements ORDER BY id";
    let rows: Vec<StatementRow> = on_conn!(tx, |c| sqlx::query_as(sql).fetch_all(c).await)?;
    Ok(rows
        .into_iter()
        .map(|r| KeyStatement {
            old_key: r.old_key,
            new_key: r.new_key,
            at: r.at,
            new_signature: r.new_signature,
            old_signature: r.old_signature,
            vouched: r.vouched_seq.zip(r.vouched_hash),
        })
        .collect())
}

/// The hash of the event at `seq`, if there is one.
pub async fn event_hash(tx: &mut Conn, seq: i64) -> Result<Option<String>, sqlx::Error> {
    on_conn!(tx, |c| sqlx::query_scalar("SELECT hash FROM audit_events WHERE seq = $1")
        .bind(seq)
        .fetch_optional(c)
        .await)
}

/// The signed tree head (a checkpoint with a root) of `size` events, or, without a size, the newest.
pub async fn tree_head(tx: &mut Conn, size: Option<i64>) -> Result<Option<SignedCheckpoint>, sqlx::Error> {
    let sql = format!(
        "SELECT {CHECKPOINT_COLUMNS} FROM audit_signed_checkpoints
         WHERE root IS NOT NULL AND ($1 IS NULL OR seq = $1) ORDER BY seq DESC, id DESC LIMIT 1"
    );
    let row: Option<CheckpointRow> = on_conn!(tx, |c| sqlx::query_as(&sql).bind(size).fetch_optional(c).await)?;
    Ok(row.map(SignedCheckpoint::from))
}
