//! The evidence bundle of one operation: one ZIP with everything that concerns its process ID — the operation
//! and its steps, every reconciliation with its evidence, every rerun request with its checklist, decisions
//! and dispatch, the AI generations, the notifications, and its audit events as hash-chained JSON Lines that
//! `server audit verify --file` checks offline. Taking it is itself audited (and inside the bundle).
use super::Caller;
use super::audit::record;
use super::audit_trail::Export;
use crate::{AppState, db};
use contract::AppError;
use domain::audit::{AuditEntry, ObjectType};
use domain::audit_action::AuditAction;
use domain::audit_export::{AuditFilter, ExportFormat};
use domain::ids::file_safe;
use domain::roles::Role;
use futures::TryStreamExt;
use serde_json::json;
use std::io::Write;

pub struct Bundle {
    pub file_name: String,
    pub bytes: Vec<u8>,
}

/// Auditors, and staff or managers of the operation's department; anyone else gets 404 (no hint it exists).
pub async fn bundle(state: &AppState, caller: &Caller, process_id: &str) -> Result<Bundle, AppError> {
    let operation = db::operations::by_process_id(&mut state.db.connection().await?, process_id)
        .await?
        .ok_or(AppError::NotFound)?;
    if !caller.may_read(&operation.department) {
        return Err(AppError::NotFound);
    }
    caller.require_any(Role::EVIDENCE_READERS)?;
    let now = state.clock.now();
    let mut tx = state.db.begin_write().await?;
    let entry =
        AuditEntry::new(caller.actor(), AuditAction::OperationEvidenceExported, ObjectType::Operation, process_id)
            .department(Some(&operation.department));
    let taken = record(&mut tx, entry, caller.request_id.as_deref(), now).await?;
    tx.commit().await?;
    let taken_seq = taken.seq;

    let mut tx = state.db.begin_read().await?;
    let steps = db::operations::steps(&mut tx, operation.id).await?;
    let reconciliations = db::reconciliations::all_for_operation(&mut tx, operation.id).await?;
    let mut requests = Vec::new();
    let mut notifications = Vec::new();
    for request in db::rerun_requests::all_for_operation(&mut tx, operation.id).await? {
        let checklist = db::rerun_requests::items(&mut tx, &request.id).await?;
        let decisions = db::rerun_requests::decisions(&mut tx, &request.id).await?;
        let dispatch = db::dispatches::get(&mut tx, &request.id).await?;
        notifications.extend(db::notifications::with_link(&mut tx, &format!("/reruns/{}", request.id)).await?);
        // A bulk rerun's part: the batch it belonged to, its reason, its checks and its owners' decisions.
        let batch = match request.batch_id.as_deref() {
            Some(id) => Some(json!({
                "batch": db::batches::by_id(&mut tx, id).await?,
                "checks": db::batches::checks(&mut tx, id).await?,
                "decisions": db::batches::decisions(&mut tx, id).await?,
            })),
            None => None,
        };
        requests.push(json!({
            "request": request,
            "checklist": checklist,
            "decisions": decisions,
            "dispatch": dispatch,
            "batch": batch,
        }));
    }
    let ai_attempts = db::ai_attempts::for_operation(&mut tx, operation.id).await?;
    drop(tx);
    // The audit events exactly as an export of this process would give them, up to the bundle's own record.
    let filter = AuditFilter { process_id: Some(process_id.to_string()), ..Default::default() };
    let export = Export::up_to(state, ExportFormat::Jsonl, filter, taken).await?;
    let readme = readme(process_id, &export);
    let pages: Vec<Vec<u8>> = super::audit_trail::stream(state.clone(), export, None).try_collect().await?;
    let proofs = proofs(state, &pages, taken_seq).await?;

    let pretty = |value: serde_json::Value| serde_json::to_vec_pretty(&value).unwrap_or_default();
    let files: Vec<(&str, Vec<u8>)> = vec![
        ("README.txt", readme.into_bytes()),
        ("operation.json", pretty(json!({"operation": operation, "steps": steps}))),
        ("reconciliations.json", pretty(json!(reconciliations))),
        ("rerun_requests.json", pretty(json!(requests))),
        ("ai_attempts.json", pretty(json!(ai_attempts))),
        ("notifications.json", pretty(json!(notifications))),
        ("audit_events.jsonl", pages.concat()),
        ("audit_proofs.jsonl", proofs),
    ];
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated);
    let fail = |e: &dyn std::fmt::Display| AppError::internal("evidence zip", e.to_string());
    // The entries' folder and the download's name come from the process ID made safe; the ID itself, as it
    // is, is inside the JSON.
    let folder = file_safe(process_id);
    for (name, bytes) in files {
        zip.start_file(format!("{folder}/{name}"), options).map_err(|e| fail(&e))?;
        zip.write_all(&bytes).map_err(|e| fail(&e))?;
    }
    let bytes = zip.finish().map_err(|e| fail(&e))?.into_inner();
    Ok(Bundle { file_name: format!("evidence-{folder}-{}.zip", now.format("%Y%m%dT%H%M%SZ")), bytes })
}

/// Each event's inclusion proof (JSON Lines) against the newest signed tree head, which holds the bundle's own
/// record (`taken`; signed now when a key is configured): each event checks alone, with nothing of others.
async fn proofs(state: &AppState, pages: &[Vec<u8>], taken: i64) -> Result<Vec<u8>, AppError> {
    super::audit_proof::checkpoint_head(state).await?;
    let size = super::audit_tree::tree_size_for(&state.db, taken).await?;
    let head = super::audit_tree::TreeHead::at(&state.db, size).await?;
    let mut lines = Vec::new();
    for line in pages.iter().flat_map(|page| page.split(|b| *b == b'\n')).filter(|l| !l.is_empty()) {
        let row: serde_json::Value = serde_json::from_slice(line).map_err(|e| AppError::internal("evidence", e))?;
        let (Some(seq), Some(hash)) = (row["seq"].as_i64(), row["hash"].as_str()) else { continue };
        let proof = head.prove(&state.db, seq, hash).await?;
        serde_json::to_writer(&mut lines, &proof).map_err(|e| AppError::internal("evidence", e))?;
        lines.push(b'\n');
    }
    Ok(lines)
}

fn readme(process_id: &str, export: &Export) -> String {
    let at = export.at.format("%Y-%m-%dT%H:%M:%SZ").to_string();
    let head = (export.head_seq, export.head_hash.as_str());
    let ja = words::audit::bundle_readme_in(words::i18n::Locale::ja, process_id, &at, head);
    let en = words::audit::bundle_readme_in(words::i18n::Locale::en, process_id, &at, head);
    format!("{ja}\n----\n\n{en}")
}
