//! An online copy of the SQLite database, checked before it is called good and audited in the live database.
use std::path::Path;

use crate::services::audit::{self, Verification};
use crate::{AppState, Db, db};
use domain::audit::{Actor, AuditEntry, ObjectType, SystemActor};
use domain::audit_action::AuditAction;

/// What became of a backup.
#[derive(Debug, PartialEq, Eq)]
pub enum Backup {
    /// Written, its audit chain verified, and the backup audited.
    Written { bytes: u64, audit_events: i64 },
    /// The target exists: a backup never overwrites.
    TargetExists,
    /// PostgreSQL is backed up with its own tools (pg_dump).
    NotThisEngine,
    /// The copy's audit chain does not verify: it must not be relied on.
    CopyDoesNotVerify,
}

pub async fn write(state: &AppState, to: &Path) -> anyhow::Result<Backup> {
    if to.exists() {
        return Ok(Backup::TargetExists);
    }
    if !db::backup_into(&state.db, to).await? {
        return Ok(Backup::NotThisEngine);
    }
    let copy = Db::connect(&format!("sqlite://{}?mode=rw", to.display())).await?;
    let verified = audit::verify(&copy).await?;
    copy.close().await;
    let Verification::Intact { events } = verified else {
        return Ok(Backup::CopyDoesNotVerify);
    };
    let bytes = std::fs::metadata(to)?.len();
    let entry = AuditEntry::new(
        Actor::system(SystemActor::CommandLine),
        AuditAction::DatabaseBackedUp,
        ObjectType::Database,
        "sqlite",
    )
    .after(serde_json::json!({"file": to.display().to_string(), "bytes": bytes, "audit_events": events}));
    let mut tx = state.db.begin_write().await?;
    audit::record(&mut tx, entry, None, state.clock.now()).await?;
    tx.commit().await?;
    Ok(Backup::Written { bytes, audit_events: events })
}
