//! The auditors' side of the trail: the filtered page (newest first, keyset by sequence number), whether the
//! chain is intact (checked on from where the last check stopped), and streamed exports.
use super::Caller;
use super::audit::record;
use crate::api::AppError;
use crate::backend::db::audit::AuditQuery;
use crate::backend::{AppState, db};
use crate::domain::audit::{Actor, AuditEntry, AuditEvent, ChainVerifier};
use crate::domain::audit_export::{AuditFilter, ExportFormat, ExportTrailer, csv_trailer, jsonl_row, jsonl_trailer};
use crate::domain::roles::Role;
use chrono::{DateTime, Utc};
use serde_json::json;

pub const PAGE_SIZE: i64 = 50;
const EXPORT_PAGE: i64 = 5_000;

/// One page of the trail as the caller may see it, newest first; `next` continues below its last event.
pub async fn page(state: &AppState, caller: &Caller, filter: &AuditFilter, before_seq: Option<i64>) -> Result<(Vec<AuditEvent>, Option<i64>), AppError> {
    let departments = caller.visible_departments();
    let query = AuditQuery { filter, departments: departments.as_deref(), after_seq: None, before_seq, up_to_seq: None, limit: PAGE_SIZE };
    let events = db::audit::select(&mut state.db.connection().await?, &query).await?;
    let next = (events.len() as i64 == PAGE_SIZE).then(|| events.last().map(|e| e.seq)).flatten();
    Ok((events, next))
}

/// What the last check of the chain found.
#[derive(Debug, PartialEq, Eq)]
pub enum ChainStatus {
    /// Every event up to `seq` was checked.
    Intact { seq: i64, checked_at: DateTime<Utc> },
    Broken { seq: i64, problem: String },
}

/// Checks the events added since the last check (not the whole chain: `server audit verify` does that) and
/// moves the checkpoint. A break is reported and the checkpoint stays before it.
pub async fn chain_status(state: &AppState) -> Result<ChainStatus, AppError> {
    let (mut seq, mut hash) = match db::audit::checkpoint(&mut state.db.connection().await?).await? {
        Some((seq, hash, _)) => (seq, hash),
        None => (0, crate::domain::audit::GENESIS_HASH.to_string()),
    };
    let mut verifier = ChainVerifier::after(seq, &hash);
    let everything = AuditFilter::default();
    loop {
        let query = AuditQuery { filter: &everything, departments: None, after_seq: Some(seq), before_seq: None, up_to_seq: None, limit: EXPORT_PAGE };
        let events = db::audit::select(&mut state.db.connection().await?, &query).await?;
        for event in &events {
            if let Err(broken) = verifier.check(event) {
                save_checkpoint(state, seq, &hash).await?;
                return Ok(ChainStatus::Broken { seq: broken.seq, problem: broken.problem });
            }
            (seq, hash) = (event.seq, event.hash.clone());
        }
        if (events.len() as i64) < EXPORT_PAGE {
            break;
        }
    }
    let checked_at = save_checkpoint(state, seq, &hash).await?;
    Ok(ChainStatus::Intact { seq, checked_at })
}

async fn save_checkpoint(state: &AppState, seq: i64, hash: &str) -> Result<DateTime<Utc>, AppError> {
    let now = state.clock.now();
    let mut tx = state.db.begin_write().await?;
    db::audit::set_checkpoint(&mut tx, seq, hash, now).await?;
    tx.commit().await?;
    Ok(now)
}

/// An export that has begun: recorded in the trail, which it includes up to and with that record.
pub struct Export {
    pub format: ExportFormat,
    pub filter: AuditFilter,
    pub head_seq: i64,
    pub head_hash: String,
    pub at: DateTime<Utc>,
}

/// Auditors only, from the browser.
pub async fn begin_for(state: &AppState, caller: &Caller, filter: AuditFilter, format: ExportFormat) -> Result<Export, AppError> {
    caller.require(Role::Auditor)?;
    begin(state, caller.actor(), caller.request_id.as_deref(), filter, format).await
}

/// Records the export (who, which format, which filter) before a row is read.
pub async fn begin(state: &AppState, actor: Actor, request_id: Option<&str>, filter: AuditFilter, format: ExportFormat) -> Result<Export, AppError> {
    let now = state.clock.now();
    let mut tx = state.db.begin_write().await?;
    let entry = AuditEntry::new(actor, "audit.exported", "audit_trail", "export").after(json!({"format": format, "filter": filter}));
    let event = record(&mut tx, entry, request_id, now).await?;
    tx.commit().await?;
    Ok(Export { format, filter, head_seq: event.seq, head_hash: event.hash, at: now })
}

/// The export's bytes, a page at a time (constant memory): a header for CSV, one row per event in sequence
/// order (CSV rows formatted by the database, see `db::audit::csv_page`), and the trailer.
pub fn stream(state: AppState, export: Export) -> impl futures::Stream<Item = Result<Vec<u8>, AppError>> + Send {
    struct Progress {
        state: AppState,
        export: Export,
        after: i64,
        rows: u64,
        done: bool,
    }
    let progress = Progress { state, export, after: 0, rows: 0, done: false };
    futures::stream::try_unfold(progress, |mut p| async move {
        if p.done {
            return Ok(None);
        }
        let mut out = Vec::new();
        let format = p.export.format;
        if p.after == 0 && format == ExportFormat::Csv {
            out.extend(csv_line(crate::domain::audit_export::CSV_COLUMNS.iter().map(|c| c.to_string()).collect())?);
        }
        let query = AuditQuery {
            filter: &p.export.filter,
            departments: None,
            after_seq: Some(p.after),
            before_seq: None,
            up_to_seq: Some(p.export.head_seq),
            limit: EXPORT_PAGE,
        };
        let mut connection = p.state.db.connection().await?;
        let (rows, last) = match format {
            ExportFormat::Csv => match db::audit::csv_page(&mut connection, &query).await? {
                Some(page) => {
                    out.extend(page.text.as_bytes());
                    out.extend(b"\r\n");
                    (page.rows, page.last_seq)
                }
                None => (0, p.after),
            },
            ExportFormat::Jsonl => {
                let events = db::audit::select(&mut connection, &query).await?;
                for event in &events {
                    out.extend(jsonl_row(event).as_bytes());
                    out.push(b'\n');
                }
                (events.len() as i64, events.last().map_or(p.after, |e| e.seq))
            }
        };
        p.rows += rows as u64;
        p.after = last;
        if rows < EXPORT_PAGE {
            let e = &p.export;
            let trailer = ExportTrailer { rows: p.rows, head_seq: e.head_seq, head_hash: e.head_hash.clone(), filter: e.filter.clone(), exported_at: e.at };
            match format {
                ExportFormat::Csv => out.extend(csv_line(csv_trailer(&trailer))?),
                ExportFormat::Jsonl => {
                    out.extend(jsonl_trailer(&trailer).as_bytes());
                    out.push(b'\n');
                }
            }
            p.done = true;
        }
        Ok(Some((out, p)))
    })
}

/// One RFC 4180 record (the header or the trailer), CRLF-terminated.
fn csv_line(record: Vec<String>) -> Result<Vec<u8>, AppError> {
    let mut writer = csv::WriterBuilder::new().terminator(csv::Terminator::CRLF).from_writer(Vec::new());
    writer.write_record(&record).map_err(|e| crate::backend::auth::internal("csv", e))?;
    writer.into_inner().map_err(|e| crate::backend::auth::internal("csv", e.error().to_string()))
}
