//! The audit signing key's file (`RERUN_GATE_AUDIT_KEY_FILE`): created once with permissions 0600, never
//! overwritten, refused when others may read it (as ssh refuses a private key others can read).
use domain::audit_proof::AuditKey;
use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::Path;

/// The environment variable that names the key file.
pub const KEY_FILE_ENV: &str = "RERUN_GATE_AUDIT_KEY_FILE";

/// Creates a new key in a new file (its folder is created too); an existing file is never replaced.
pub fn create(path: &Path) -> Result<AuditKey, String> {
    if let Some(folder) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(folder).map_err(|e| format!("{}: {e}", folder.display()))?;
    }
    let key = AuditKey::generate();
    let mut file =
        std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(path).map_err(|e| {
            match e.kind() {
                std::io::ErrorKind::AlreadyExists => {
                    format!("{} already exists: a key file is never replaced", path.display())
                }
                _ => format!("{}: {e}", path.display()),
            }
        })?;
    file.write_all(key.to_pem().as_bytes())
        .and_then(|()| file.sync_all())
        .map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(key)
}

/// Reads the key, refusing a file that its group or others may read or write.
pub fn load(path: &Path) -> Result<AuditKey, String> {
    let shown = path.display();
    let mode = std::fs::metadata(path).map_err(|e| format!("the audit key file {shown}: {e}"))?.permissions().mode();
    if mode & 0o077 != 0 {
        return Err(format!(
            "the audit key file {shown} may be read by others (mode {:o}): run chmod 600 {shown}",
            mode & 0o777
        ));
    }
    let pem = zeroize::Zeroizing::new(std::fs::read_to_string(path).map_err(|e| format!("{shown}: {e}"))?);
    AuditKey::from_pem(&pem).map_err(|e| format!("{shown}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_file_is_private_is_never_replaced_and_is_refused_once_others_may_read_it() {
        let folder = std::env::temp_dir().join(format!("rg-key-{}", std::process::id()));
        let path = folder.join("audit.key");
        let _ = std::fs::remove_file(&path);
        let key = create(&path).unwrap();
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        assert_eq!(load(&path).unwrap().public(), key.public());
        assert!(create(&path).unwrap_err().contains("never replaced"));
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert!(load(&path).unwrap_err().contains("chmod 600"));
        std::fs::remove_dir_all(&folder).unwrap();
    }
}
