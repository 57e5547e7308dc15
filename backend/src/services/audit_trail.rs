//! The auditors' side of the trail: the filtered page (newest first, keyset by sequence number), whether the
//! chain is intact (checked on from where the last check stopped), and streamed exports.
use super::Caller;
use super::audit::record;
use crate::db::audit::AuditQuery;
use crate::{AppState, db};
use chrono::{DateTime, Utc};
use contract::AppError;
use domain::audit::{Actor, AuditEntry, AuditEvent, ObjectType};
use domain::audit_action::AuditAction;
use domain::audit_export::{
    AuditFilter, CSV_COLUMNS, ExportFormat, ExportTrailer, jsonl_row, jsonl_trailer, write_csv_header, write_csv_proof,
    write_csv_trailer,
};
use domain::audit_proof::{KeyStatement, SignedCheckpoint};
use domain::roles::Role;
use futures::StreamExt;
use serde_json::json;
use words::i18n::Locale;

pub const PAGE_SIZE: i64 = 50;
const EXPORT_PAGE: i64 = 5_000;

/// One page of the trail as the caller may see it, newest first; `next` continues below its last event. The
/// routine events (`AuditAction::is_routine`) only when asked, or when the filter names one.
pub async fn page(
    state: &AppState,
    caller: &Caller,
    filter: &AuditFilter,
    before_seq: Option<i64>,
    routine: bool,
) -> Result<(Vec<AuditEvent>, Option<i64>), AppError> {
    let departments = caller.readable_departments();
    let routine_actions: Vec<&'static str> =
        AuditAction::ALL.iter().filter(|a| a.is_routine()).map(|a| a.as_str()).collect();
    let query = AuditQuery {
        filter,
        departments: departments.as_deref(),
        after_seq: None,
        before_seq,
        up_to_seq: None,
        except_actions: if routine || filter.action.is_some() { &[] } else { &routine_actions },
        limit: PAGE_SIZE,
    };
    let events = db::audit::select(&mut state.db.connection().await?, &query).await?;
    let next = (events.len() as i64 == PAGE_SIZE).then(|| events.last().map(|e| e.seq)).flatten();
    Ok((events, next))
}

/// What the last check of the chain found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ChainStatus {
    /// Every event up to `seq` was checked.
    Intact {
        seq: i64,
        checked_at: DateTime<Utc>,
    },
    Broken {
        seq: i64,
        problem: String,
    },
    /// No check has run on this database yet.
    Unchecked,
}

/// The break the last check of this process found, if any (a break is not stored: the next check finds it
/// again, on every instance).
#[derive(Default)]
struct LastBreak(std::sync::Mutex<Option<ChainStatus>>);

fn last_break(state: &AppState) -> std::sync::Arc<LastBreak> {
    state.kept.get_or_init(LastBreak::default)
}

/// The chain as the last check found it, for the audit page: it only reads (a page never writes; the checks
/// run in the background, `check_chain`).
pub async fn chain_status(state: &AppState) -> Result<ChainStatus, AppError> {
    let known_break = last_break(state).0.lock().unwrap_or_else(|p| p.into_inner()).clone();
    if let Some(broken) = known_break {
        return Ok(broken);
    }
    let checkpoint = db::audit::checkpoint(&mut state.db.connection().await?).await?;
    Ok(checkpoint.map_or(ChainStatus::Unchecked, |(seq, _, checked_at)| ChainStatus::Intact { seq, checked_at }))
}

/// Checks the events added since the last check (not the whole chain: `server audit verify` does that) and
/// moves the checkpoint; run in the background. A break is reported and the checkpoint stays before it.
pub async fn check_chain(state: &AppState) -> Result<ChainStatus, AppError> {
    // One connection at a time: the read's is back in the pool before the write asks for one.
    let walked = {
        let mut conn = state.db.connection().await?;
        let (seq, hash) = match db::audit::checkpoint(&mut conn).await? {
            Some((seq, hash, _)) => (seq, hash),
            None => (0, domain::audit::GENESIS_HASH.to_string()),
        };
        super::audit::walk(&mut conn, seq, &hash).await?
    };
    let status = match walked {
        Ok((seq, hash)) => ChainStatus::Intact { seq, checked_at: save_checkpoint(state, seq, &hash).await? },
        Err(broken) => {
            tracing::error!(seq = broken.seq, problem = %broken.problem, "the audit chain is broken");
            ChainStatus::Broken { seq: broken.seq, problem: broken.problem }
        }
    };
    let known_break = matches!(status, ChainStatus::Broken { .. }).then(|| status.clone());
    *last_break(state).0.lock().unwrap_or_else(|p| p.into_inner()) = known_break;
    Ok(status)
}

async fn save_checkpoint(state: &AppState, seq: i64, hash: &str) -> Result<DateTime<Utc>, AppError> {
    let now = state.clock.now();
    let mut tx = state.db.begin_write().await?;
    db::audit::set_checkpoint(&mut tx, seq, hash, now).await?;
    tx.commit().await?;
    Ok(now)
}

/// An export that has begun: recorded in the trail, which it includes up to and with that record, and its
/// proof: the signed checkpoints up to its head (one at the head itself, signed as it began) and the statements
/// of the keys that signed them.
pub struct Export {
    pub format: ExportFormat,
    pub filter: AuditFilter,
    pub head_seq: i64,
    pub head_hash: String,
    pub at: DateTime<Utc>,
    pub checkpoints: Vec<SignedCheckpoint>,
    pub statements: Vec<KeyStatement>,
}

/// Auditors only, from the browser.
pub async fn begin_for(
    state: &AppState,
    caller: &Caller,
    filter: AuditFilter,
    format: ExportFormat,
) -> Result<Export, AppError> {
    caller.require(Role::Auditor)?;
    begin(state, caller.actor(), caller.request_id.as_deref(), filter, format).await
}

/// Records the export (who, which format, which filter) before a row is read.
pub async fn begin(
    state: &AppState,
    actor: Actor,
    request_id: Option<&str>,
    filter: AuditFilter,
    format: ExportFormat,
) -> Result<Export, AppError> {
    let now = state.clock.now();
    let mut tx = state.db.begin_write().await?;
    let entry = AuditEntry::new(actor, AuditAction::AuditExported, ObjectType::AuditTrail, "export")
        .after(json!({"format": format, "filter": filter}));
    let event = record(&mut tx, entry, request_id, now).await?;
    tx.commit().await?;
    Export::up_to(state, format, filter, event).await
}

impl Export {
    /// An export up to and with `head` (its own audit event), with a checkpoint signed at that head. Without
    /// one the export still goes (the reason is logged); its check will say that nothing vouches for the head.
    pub async fn up_to(
        state: &AppState,
        format: ExportFormat,
        filter: AuditFilter,
        head: AuditEvent,
    ) -> Result<Export, AppError> {
        let _ = super::audit_proof::checkpoint_at(state, head.seq, &head.hash).await;
        let mut conn = state.db.connection().await?;
        let checkpoints = db::audit_proof::checkpoints_up_to(&mut conn, head.seq).await?;
        let statements = db::audit_proof::statements(&mut conn).await?;
        Ok(Export { format, filter, head_seq: head.seq, head_hash: head.hash, at: head.at, checkpoints, statements })
    }
}

/// The proof's lines, before the rows: JSON Lines `{"key_statement": …}` and `{"checkpoint": …}`; CSV records
/// `# key_statement` and `# checkpoint` with the JSON in the second cell, like the trailer.
fn proof_lines(export: &Export, out: &mut Vec<u8>) {
    let statements = export.statements.iter().map(|s| ("key_statement", serde_json::to_value(s)));
    let checkpoints = export.checkpoints.iter().map(|c| ("checkpoint", serde_json::to_value(c)));
    for (kind, value) in statements.chain(checkpoints) {
        let value = value.unwrap_or_default();
        match export.format {
            ExportFormat::Jsonl => {
                out.extend(json!({ kind: value }).to_string().as_bytes());
                out.push(b'\n');
            }
            ExportFormat::Csv => write_csv_proof(out, kind, &value),
        }
    }
}

/// The export's bytes, a page at a time (constant memory): a heading row for CSV (in `headings`' language, or
/// the columns' codes), one row per event in sequence order, and the trailer.
pub fn stream(
    state: AppState,
    export: Export,
    headings: Option<Locale>,
) -> impl futures::Stream<Item = Result<Vec<u8>, AppError>> + Send {
    match export.format {
        ExportFormat::Csv => csv_stream(state, export, headings).boxed(),
        ExportFormat::Jsonl => jsonl_stream(state, export).boxed(),
    }
}

fn trailer(export: &Export, rows: u64) -> ExportTrailer {
    ExportTrailer {
        rows,
        head_seq: export.head_seq,
        head_hash: export.head_hash.clone(),
        filter: export.filter.clone(),
        exported_at: export.at,
    }
}

fn csv_stream(
    state: AppState,
    export: Export,
    headings: Option<Locale>,
) -> impl futures::Stream<Item = Result<Vec<u8>, AppError>> + Send {
    let query = AuditQuery {
        filter: &export.filter,
        departments: None,
        after_seq: Some(0),
        before_seq: None,
        up_to_seq: Some(export.head_seq),
        except_actions: &[],
        limit: 0,
    };
    let chunks = db::audit::csv_chunks(&state.db, query);
    let mut header = Vec::new();
    write_csv_header(&mut header, &words::columns::header_in(headings, &CSV_COLUMNS));
    proof_lines(&export, &mut header);
    // Header, the chunks as they come (counting rows), then the trailer.
    futures::stream::try_unfold(
        (Some(header), chunks, export, 0u64, false),
        |(header, mut chunks, export, rows, done)| async move {
            if let Some(header) = header {
                return Ok(Some((header, (None, chunks, export, rows, done))));
            }
            if done {
                return Ok(None);
            }
            match chunks.recv().await {
                Some(chunk) => {
                    let chunk = chunk?;
                    Ok(Some((chunk.bytes, (None, chunks, export, rows + chunk.rows, false))))
                }
                None => {
                    let mut out = Vec::new();
                    write_csv_trailer(&mut out, &trailer(&export, rows));
                    Ok(Some((out, (None, chunks, export, rows, true))))
                }
            }
        },
    )
}

fn jsonl_stream(state: AppState, export: Export) -> impl futures::Stream<Item = Result<Vec<u8>, AppError>> + Send {
    let mut proof = Vec::new();
    proof_lines(&export, &mut proof);
    let rows = futures::stream::try_unfold(
        (state, export, 0i64, 0u64, false),
        |(state, export, after, rows, done)| async move {
            if done {
                return Ok(None);
            }
            let query = AuditQuery {
                filter: &export.filter,
                departments: None,
                after_seq: Some(after),
                before_seq: None,
                up_to_seq: Some(export.head_seq),
                except_actions: &[],
                limit: EXPORT_PAGE,
            };
            let events = db::audit::select(&mut state.db.connection().await?, &query).await?;
            let mut out = Vec::new();
            for event in &events {
                out.extend(jsonl_row(event).as_bytes());
                out.push(b'\n');
            }
            let (rows, last, done) = (
                rows + events.len() as u64,
                events.last().map_or(after, |e| e.seq),
                (events.len() as i64) < EXPORT_PAGE,
            );
            if done {
                out.extend(jsonl_trailer(&trailer(&export, rows)).as_bytes());
                out.push(b'\n');
            }
            Ok(Some((out, (state, export, last, rows, done))))
        },
    );
    futures::stream::once(async move { Ok(proof) }).chain(rows)
}
