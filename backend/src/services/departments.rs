//! Departments come from the configuration file; start-up brings the database in line with it.
use super::audit::record;
use crate::{AppState, db};
use contract::AppError;
use domain::audit::{Actor, AuditEntry, ObjectType, SystemActor};
use domain::audit_action::AuditAction;
use serde_json::json;

/// Adds the configured departments that are missing and renames changed ones; never deletes (users and
/// operations may still point at a department that left the file).
pub async fn sync_from_config(state: &AppState) -> Result<(), AppError> {
    let now = state.clock.now();
    let mut tx = state.db.begin_write().await?;
    let existing = db::departments::all(&mut tx).await?;
    for department in &state.config.departments {
        match existing.iter().find(|d| d.code == department.code) {
            None => {
                let names = (department.name.as_str(), department.name_en.as_deref());
                let id = db::departments::insert(&mut tx, &department.code, names, now).await?;
                let entry = AuditEntry::new(
                    Actor::system(SystemActor::Configuration),
                    AuditAction::DepartmentCreated,
                    ObjectType::Department,
                    id,
                )
                .department(Some(&department.code))
                .after(json!({"code": department.code, "name": department.name, "name_en": department.name_en}));
                record(&mut tx, entry, None, now).await?;
            }
            Some(known) if known.name != department.name || known.name_en != department.name_en => {
                let names = (department.name.as_str(), department.name_en.as_deref());
                db::departments::rename(&mut tx, known.id, names).await?;
                let entry = AuditEntry::new(
                    Actor::system(SystemActor::Configuration),
                    AuditAction::DepartmentRenamed,
                    ObjectType::Department,
                    known.id,
                )
                .department(Some(&department.code))
                .before(json!({"name": known.name, "name_en": known.name_en}))
                .after(json!({"name": department.name, "name_en": department.name_en}));
                record(&mut tx, entry, None, now).await?;
            }
            Some(_) => {}
        }
    }
    tx.commit().await?;
    Ok(())
}
