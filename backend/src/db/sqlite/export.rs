//! CSV exports on SQLite read rows on their own read-only connection with rusqlite, borrowing each value
//! instead of copying it through sqlx's connection thread: a million rows then cost about what `sqlite3 -csv`
//! takes. Runs on a blocking thread and hands over chunks through a small bounded channel (constant memory).
use super::super::audit_rows::{Bind, CsvChunk, EVENT_COLUMNS};
use domain::audit_export::write_csv_record;
use rusqlite::OpenFlags;
use rusqlite::types::ValueRef;
use tokio::sync::mpsc::Sender;

const CHUNK_BYTES: usize = 256 * 1024;

pub fn csv(path: &std::path::Path, filter: &str, binds: &[Bind], chunks: &Sender<Result<CsvChunk, sqlx::Error>>) {
    if let Err(e) = write(path, filter, binds, chunks) {
        let _ = chunks.blocking_send(Err(sqlx::Error::Protocol(format!("export read: {e}"))));
    }
}

fn write(
    path: &std::path::Path,
    filter: &str,
    binds: &[Bind],
    chunks: &Sender<Result<CsvChunk, sqlx::Error>>,
) -> rusqlite::Result<()> {
    let connection = rusqlite::Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    connection.busy_timeout(std::time::Duration::from_secs(10))?;
    let mut statement =
        connection.prepare(&format!("SELECT {EVENT_COLUMNS} FROM audit_events {filter} ORDER BY seq"))?;
    for (i, bind) in binds.iter().enumerate() {
        match bind {
            Bind::Int(v) => statement.raw_bind_parameter(i + 1, v)?,
            Bind::Text(v) => statement.raw_bind_parameter(i + 1, v)?,
            // As sqlx stores times on SQLite, so that text comparison orders them.
            Bind::Time(v) => {
                statement.raw_bind_parameter(i + 1, v.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, false))?
            }
        }
    }
    let mut rows = statement.raw_query();
    let (mut bytes, mut count) = (Vec::with_capacity(CHUNK_BYTES + 4096), 0u64);
    let mut seq = String::new();
    while let Some(row) = rows.next()? {
        let text = |i: usize| -> rusqlite::Result<Option<&str>> {
            match row.get_ref(i)? {
                ValueRef::Null => Ok(None),
                value => value.as_str().map(Some).map_err(Into::into),
            }
        };
        seq.clear();
        seq.push_str(&row.get_ref(0)?.as_i64()?.to_string());
        let fields = [
            Some(seq.as_str()),
            text(1)?,
            text(2)?,
            text(3)?,
            text(4)?,
            text(5)?,
            text(6)?,
            text(7)?,
            text(8)?,
            text(9)?,
            text(10)?,
            text(11)?,
            text(12)?,
            text(13)?,
            text(14)?,
        ];
        write_csv_record(&mut bytes, &fields);
        count += 1;
        if bytes.len() >= CHUNK_BYTES {
            let chunk =
                CsvChunk { bytes: std::mem::replace(&mut bytes, Vec::with_capacity(CHUNK_BYTES + 4096)), rows: count };
            count = 0;
            if chunks.blocking_send(Ok(chunk)).is_err() {
                return Ok(()); // the reader went away (download cancelled)
            }
        }
    }
    if count > 0 {
        let _ = chunks.blocking_send(Ok(CsvChunk { bytes, rows: count }));
    }
    Ok(())
}
