//! The audit trail table. There is deliberately no update or delete here: the trail is append-only.
use super::Db;
pub use super::audit_rows::CsvChunk;
use super::audit_rows::{Bind, EVENT_COLUMNS};
use super::{Conn, RowLock, on_conn};
use chrono::{DateTime, Utc};
use domain::audit::{AuditEntry, AuditEvent};
use domain::audit_export::AuditFilter;

const HEAD: &str = "SELECT seq, hash FROM audit_head WHERE id = 1";

/// Appends one event after the current head, usually in one statement. A PostgreSQL write transaction read
/// and locked the head first (`FOR UPDATE`, see `Db::begin_write`) and moves it with each append. SQLite
/// writers are serialised by `BEGIN IMMEDIATE` and this process's writer, which remembers the head; if another
/// process appended meanwhile, the sequence number's primary key refuses the insert and the head is read
/// again. Either way two appends can never fork the chain; a trigger moves `audit_head` with every insert.
pub async fn append(tx: &mut Conn, entry: AuditEntry, now: DateTime<Utc>) -> Result<AuditEvent, sqlx::Error> {
    let cached = match tx {
        Conn::Sqlite(_, Some(lock)) => lock.audit_head(),
        Conn::Postgres(_, Some(lock)) => Some(lock.head.clone()),
        _ => None,
    };
    let event = match cached {
        Some(head) => match insert(tx, entry.clone().seal(prev(&head), now)).await {
            Err(sqlx::Error::Database(e)) if e.is_unique_violation() => {
                if let Conn::Sqlite(_, Some(lock)) = tx {
                    lock.forget_audit_head();
                }
                let head = read_head(tx).await?;
                insert(tx, entry.seal(prev(&head), now)).await?
            }
            other => other?,
        },
        None => {
            let head = read_head(tx).await?;
            insert(tx, entry.seal(prev(&head), now)).await?
        }
    };
    moved_head(tx, &event);
    Ok(event)
}

/// The writer's head is now `event` (the next append goes after it without reading the head).
fn moved_head(tx: &mut Conn, event: &AuditEvent) {
    match tx {
        Conn::Sqlite(_, Some(lock)) => lock.moved_head = Some((event.seq, event.hash.clone())),
        Conn::Postgres(_, Some(lock)) => lock.head = (event.seq, event.hash.clone()),
        _ => {}
    }
}

pub(super) fn prev(head: &(i64, String)) -> Option<(i64, &str)> {
    (head.0 > 0).then_some((head.0, head.1.as_str()))
}

async fn read_head(tx: &mut Conn) -> Result<(i64, String), sqlx::Error> {
    let sql = format!("{HEAD}{}", tx.lock_clause(RowLock::Every));
    on_conn!(tx, |c| sqlx::query_as(&sql).fetch_one(c).await)
}

/// PostgreSQL: every write transaction's first statement (see `Db::begin_write`).
pub(super) async fn lock_head(tx: &mut super::Handle<sqlx::Postgres>) -> Result<(i64, String), sqlx::Error> {
    sqlx::query_as(&format!("{HEAD}{}", super::postgres::lock_clause(RowLock::Every))).fetch_one(&mut **tx).await
}

async fn insert(tx: &mut Conn, event: AuditEvent) -> Result<AuditEvent, sqlx::Error> {
    let sql = format!("INSERT INTO audit_events ({INSERT_COLUMNS}) VALUES ({})", placeholders(0));
    on_conn!(tx, |c| bind_event!(sqlx::query(&sql), event).execute(c).await.map(drop))?;
    Ok(event)
}

pub(super) const INSERT_COLUMNS: &str = "seq, at, actor_kind, actor_id, actor_label, action, object_type, object_id,
    department, before_json, after_json, reason, request_id, prev_hash, hash";

/// How many values an audit event's row takes (`INSERT_COLUMNS`).
pub(super) const EVENT_PARAMS: usize = 15;

/// `$n+1, …, $n+15`: the event's values after `n` other parameters.
pub(super) fn placeholders(n: usize) -> String {
    super::params(n, EVENT_PARAMS)
}

macro_rules! bind_event {
    ($query:expr, $event:expr) => {
        $query
            .bind($event.seq)
            .bind($event.at)
            .bind(&$event.actor_kind)
            .bind(&$event.actor_id)
            .bind(&$event.actor_label)
            .bind(&$event.action)
            .bind(&$event.object_type)
            .bind(&$event.object_id)
            .bind(&$event.department)
            .bind(&$event.before_json)
            .bind(&$event.after_json)
            .bind(&$event.reason)
            .bind(&$event.request_id)
            .bind(&$event.prev_hash)
            .bind(&$event.hash)
    };
}
pub(super) use bind_event;

/// Appends events in their order, each at its moment, the first as `append` does (it finds the head), the
/// others after it in multi-row statements: a batch's events cost a few round trips instead of one each.
pub async fn append_all(
    tx: &mut Conn,
    entries: Vec<(AuditEntry, DateTime<Utc>)>,
) -> Result<Vec<AuditEvent>, sqlx::Error> {
    let mut entries = entries.into_iter();
    let Some((first, at)) = entries.next() else { return Ok(Vec::new()) };
    let mut events = vec![append(tx, first, at).await?];
    for (entry, at) in entries {
        let last = events.last().expect("the first event is appended");
        let event = entry.seal(Some((last.seq, last.hash.as_str())), at);
        events.push(event);
    }
    // 100 events a statement: 1,500 parameters, well within both engines' limits.
    for chunk in events[1..].chunks(100) {
        let rows: Vec<String> = (0..chunk.len()).map(|i| format!("({})", placeholders(i * EVENT_PARAMS))).collect();
        let sql = format!("INSERT INTO audit_events ({INSERT_COLUMNS}) VALUES {}", rows.join(", "));
        on_conn!(tx, |c| {
            let mut query = sqlx::query(&sql);
            for event in chunk {
                query = bind_event!(query, event);
            }
            query.execute(c).await.map(drop)
        })?;
    }
    moved_head(tx, events.last().expect("one event at least"));
    Ok(events)
}

pub async fn head(tx: &mut Conn) -> Result<(i64, String), sqlx::Error> {
    on_conn!(tx, |c| sqlx::query_as("SELECT seq, hash FROM audit_head WHERE id = 1").fetch_one(c).await)
}

/// An event as its row reads (the domain's `AuditEvent` knows no database).
#[derive(sqlx::FromRow)]
struct EventRow {
    seq: i64,
    at: DateTime<Utc>,
    actor_kind: String,
    actor_id: Option<String>,
    actor_label: String,
    action: String,
    object_type: String,
    object_id: String,
    department: Option<String>,
    before_json: Option<String>,
    after_json: Option<String>,
    reason: Option<String>,
    request_id: Option<String>,
    prev_hash: String,
    hash: String,
}

impl From<EventRow> for AuditEvent {
    fn from(r: EventRow) -> Self {
        AuditEvent {
            seq: r.seq,
            at: r.at,
            actor_kind: r.actor_kind,
            actor_id: r.actor_id,
            actor_label: r.actor_label,
            action: r.action,
            object_type: r.object_type,
            object_id: r.object_id,
            department: r.department,
            before_json: r.before_json,
            after_json: r.after_json,
            reason: r.reason,
            request_id: r.request_id,
            prev_hash: r.prev_hash,
            hash: r.hash,
        }
    }
}

/// One page of events in sequence order, starting after `after_seq` (keyset pagination).
pub async fn page_after(tx: &mut Conn, after_seq: i64, limit: i64) -> Result<Vec<AuditEvent>, sqlx::Error> {
    let everything = AuditFilter::default();
    select(
        tx,
        &AuditQuery {
            filter: &everything,
            departments: None,
            after_seq: Some(after_seq),
            before_seq: None,
            up_to_seq: None,
            except_actions: &[],
            limit,
        },
    )
    .await
}

/// The newest events about one object, newest first.
pub async fn for_object(
    tx: &mut Conn,
    object_type: &str,
    object_id: &str,
    limit: i64,
) -> Result<Vec<AuditEvent>, sqlx::Error> {
    let sql = format!(
        "SELECT {EVENT_COLUMNS} FROM audit_events WHERE object_type = $1 AND object_id = $2 ORDER BY seq DESC LIMIT $3"
    );
    let rows: Vec<EventRow> =
        on_conn!(tx, |c| sqlx::query_as(&sql).bind(object_type).bind(object_id).bind(limit).fetch_all(c).await)?;
    Ok(rows.into_iter().map(AuditEvent::from).collect())
}

/// Which events a reader asks for: the filter, the departments they may see (`None`: all, for auditors), and
/// a keyset position — `after_seq` ascending (exports), or `before_seq` descending (the page, newest first).
pub struct AuditQuery<'a> {
    pub filter: &'a AuditFilter,
    pub departments: Option<&'a [String]>,
    pub after_seq: Option<i64>,
    pub before_seq: Option<i64>,
    pub up_to_seq: Option<i64>,
    /// Actions left out (the page's folded routine events).
    pub except_actions: &'a [&'static str],
    pub limit: i64,
}

/// The WHERE clause for a query (only the conditions asked for, so each can use its index) and its values.
fn conditions(query: &AuditQuery<'_>) -> (String, Vec<Bind>) {
    let mut conditions: Vec<String> = Vec::new();
    let mut binds: Vec<Bind> = Vec::new();
    let mut add = |condition: &str, bind: Bind| {
        binds.push(bind);
        conditions.push(condition.replace('?', &format!("${}", binds.len())));
    };
    let f = query.filter;
    if let Some(seq) = query.after_seq {
        add("seq > ?", Bind::Int(seq));
    }
    if let Some(seq) = query.before_seq {
        add("seq < ?", Bind::Int(seq));
    }
    if let Some(seq) = query.up_to_seq {
        add("seq <= ?", Bind::Int(seq));
    }
    if let Some(at) = f.from {
        add("at >= ?", Bind::Time(at));
    }
    if let Some(at) = f.to {
        add("at < ?", Bind::Time(at));
    }
    let text = |v: &Option<String>| v.as_ref().map(|s| Bind::Text(s.trim().to_string()));
    for (column, value) in [
        ("department", text(&f.department)),
        ("actor_label", text(&f.actor)),
        ("action", text(&f.action)),
        ("object_type", text(&f.object_type)),
        ("object_id", text(&f.object_id)),
    ] {
        if let Some(value) = value {
            add(&format!("{column} = ?"), value);
        }
    }
    if let Some(process_id) = text(&f.process_id) {
        add("object_type = 'operation' AND object_id = ?", process_id);
    }
    if !query.except_actions.is_empty() {
        let mut list = Vec::new();
        for action in query.except_actions {
            binds.push(Bind::Text(action.to_string()));
            list.push(format!("${}", binds.len()));
        }
        conditions.push(format!("action NOT IN ({})", list.join(", ")));
    }
    match query.departments {
        Some([]) => conditions.push("1 = 0".into()),
        Some(codes) => {
            let mut list = Vec::new();
            for code in codes {
                binds.push(Bind::Text(code.clone()));
                list.push(format!("${}", binds.len()));
            }
            conditions.push(format!("department IN ({})", list.join(", ")));
        }
        None => {}
    }
    let clause = if conditions.is_empty() { String::new() } else { format!("WHERE {}", conditions.join(" AND ")) };
    (clause, binds)
}

macro_rules! bind_all {
    ($query:expr, $binds:expr) => {{
        let mut q = $query;
        for bind in $binds {
            q = match bind {
                Bind::Int(v) => q.bind(*v),
                Bind::Text(v) => q.bind(v.as_str()),
                Bind::Time(v) => q.bind(*v),
            };
        }
        q
    }};
}

pub async fn select(tx: &mut Conn, query: &AuditQuery<'_>) -> Result<Vec<AuditEvent>, sqlx::Error> {
    let (filter, binds) = conditions(query);
    let order = if query.before_seq.is_some() || query.after_seq.is_none() { "DESC" } else { "ASC" };
    let sql = format!("SELECT {EVENT_COLUMNS} FROM audit_events {filter} ORDER BY seq {order} LIMIT {}", query.limit);
    let rows: Vec<EventRow> = on_conn!(tx, |c| bind_all!(sqlx::query_as(&sql), &binds).fetch_all(c).await)?;
    Ok(rows.into_iter().map(AuditEvent::from).collect())
}

/// The events a query chooses, in sequence order, as CSV records in chunks through a small bounded channel
/// (constant memory). SQLite reads them on its own connection (see `sqlite::export`); PostgreSQL a page at a time.
pub fn csv_chunks(db: &Db, query: AuditQuery<'_>) -> tokio::sync::mpsc::Receiver<Result<CsvChunk, sqlx::Error>> {
    let (sender, receiver) = tokio::sync::mpsc::channel(4);
    match db {
        Db::Sqlite(pool, ..) => {
            let (filter, binds) = conditions(&query);
            let path = pool.connect_options().get_filename().to_owned();
            tokio::task::spawn_blocking(move || super::sqlite::export::csv(&path, &filter, &binds, &sender));
        }
        Db::Postgres(..) => {
            let (db, filter, up_to_seq, departments) =
                (db.clone(), query.filter.clone(), query.up_to_seq, query.departments.map(<[String]>::to_vec));
            let mut after = query.after_seq.unwrap_or(0);
            tokio::spawn(async move {
                loop {
                    let page = AuditQuery {
                        filter: &filter,
                        departments: departments.as_deref(),
                        after_seq: Some(after),
                        before_seq: None,
                        up_to_seq,
                        except_actions: &[],
                        limit: 5_000,
                    };
                    let events = async { select(&mut db.connection().await?, &page).await }.await;
                    let events = match events {
                        Ok(events) => events,
                        Err(e) => return drop(sender.send(Err(e)).await),
                    };
                    let mut bytes = Vec::new();
                    for event in &events {
                        domain::audit_export::write_csv_event(&mut bytes, event);
                    }
                    let (rows, last) = (events.len() as u64, events.last().map(|e| e.seq));
                    if rows > 0 && sender.send(Ok(CsvChunk { bytes, rows })).await.is_err() {
                        return;
                    }
                    match last {
                        Some(seq) if rows == 5_000 => after = seq,
                        _ => return,
                    }
                }
            });
        }
    }
    receiver
}

/// Where the last check of the chain stopped: (seq, hash), or nothing yet.
pub async fn checkpoint(tx: &mut Conn) -> Result<Option<(i64, String, DateTime<Utc>)>, sqlx::Error> {
    on_conn!(tx, |c| sqlx::query_as("SELECT seq, hash, checked_at FROM audit_checkpoint WHERE id = 1")
        .fetch_optional(c)
        .await)
}

pub async fn set_checkpoint(tx: &mut Conn, seq: i64, hash: &str, now: DateTime<Utc>) -> Result<(), sqlx::Error> {
    on_conn!(tx, |c| sqlx::query(
        "INSERT INTO audit_checkpoint (id, seq, hash, checked_at) VALUES (1, $1, $2, $3)
         ON CONFLICT (id) DO UPDATE SET seq = excluded.seq, hash = excluded.hash, checked_at = excluded.checked_at"
    )
    .bind(seq)
    .bind(hash)
    .bind(now)
    .execute(c)
    .await
    .map(drop))
}
