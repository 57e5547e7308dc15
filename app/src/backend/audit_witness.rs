//! The signer's memory (`<key file>.witness`): every checkpoint the server signs, appended and flushed to disk
//! before it counts as signed, in a file beside the key (same owner, same protection). The signer takes its
//! word, not the database's, for what it vouched for before: whoever keeps the database can remove the newest
//! events and the checkpoints that vouched for them, but not this file's lines (they live with the key).
//!
//! One JSON object per line, in the shape an export's proof lines have (`{"checkpoint": …}`), so that
//! `server audit verify --checkpoints <witness>` reads it as it reads an earlier export.
use crate::domain::audit_proof::{AuditKey, SignedCheckpoint, TrustedKeys};
use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// The memory of the key in `key_file`.
pub fn path_for(key_file: &Path) -> PathBuf {
    let mut path = key_file.as_os_str().to_owned();
    path.push(".witness");
    PathBuf::from(path)
}

/// What is wrong with the memory: it is never recreated silently, a person looks at it first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WitnessProblem {
    Missing { path: PathBuf },
    Unreadable { path: PathBuf, problem: String },
}

impl std::fmt::Display for WitnessProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WitnessProblem::Missing { path } => write!(f, "the audit signer's memory {} is missing", path.display()),
            WitnessProblem::Unreadable { path, problem } => {
                write!(f, "the audit signer's memory {} cannot be read: {problem}", path.display())
            }
        }
    }
}

#[derive(serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
enum Line {
    Checkpoint(SignedCheckpoint),
}

/// The memory as read at start: the file and the last checkpoint it holds.
#[derive(Debug)]
pub struct Witness {
    path: PathBuf,
    last: Option<SignedCheckpoint>,
}

impl Witness {
    /// A new, empty memory for a new key (its folder exists: the key's); an existing file is never replaced.
    pub fn create(path: &Path) -> Result<Witness, String> {
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(path)
            .and_then(|file| file.sync_all())
            .map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(Witness { path: path.to_path_buf(), last: None })
    }

    /// Reads the memory; every line must be a checkpoint signed by `key` (the file is the key's, so a line it
    /// did not sign means the file was changed).
    pub fn open(path: &Path, key: &AuditKey) -> Result<Witness, WitnessProblem> {
        let unreadable = |problem: String| WitnessProblem::Unreadable { path: path.to_path_buf(), problem };
        let mode = match std::fs::metadata(path) {
            Ok(meta) => meta.permissions().mode(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(WitnessProblem::Missing { path: path.to_path_buf() });
            }
            Err(e) => return Err(unreadable(e.to_string())),
        };
        if mode & 0o077 != 0 {
            return Err(unreadable(format!("others may read or write it (mode {:o})", mode & 0o777)));
        }
        let text = std::fs::read_to_string(path).map_err(|e| unreadable(e.to_string()))?;
        let trusted = TrustedKeys::new(key.public(), &[]);
        let mut last: Option<SignedCheckpoint> = None;
        for (n, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
            let Ok(Line::Checkpoint(checkpoint)) = serde_json::from_str(line) else {
                return Err(unreadable(format!("line {} is not a checkpoint", n + 1)));
            };
            if !trusted.verifies(&checkpoint) {
                return Err(unreadable(format!("line {} is not signed by this key", n + 1)));
            }
            if last.as_ref().is_some_and(|l| checkpoint.seq < l.seq) {
                return Err(unreadable(format!("line {} goes back to event {}", n + 1, checkpoint.seq)));
            }
            last = Some(checkpoint);
        }
        Ok(Witness { path: path.to_path_buf(), last })
    }

    /// The last checkpoint signed: the event (sequence number and hash) the database must still hold.
    pub fn last(&self) -> Option<&SignedCheckpoint> {
        self.last.as_ref()
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends a checkpoint and waits until it is on disk: only then does it count as signed.
    pub fn remember(&mut self, checkpoint: &SignedCheckpoint) -> Result<(), WitnessProblem> {
        let unreadable =
            |e: std::io::Error| WitnessProblem::Unreadable { path: self.path.clone(), problem: e.to_string() };
        let mut line = serde_json::to_string(&Line::Checkpoint(checkpoint.clone())).expect("a checkpoint serialises");
        line.push('\n');
        let mut file = std::fs::OpenOptions::new().append(true).open(&self.path).map_err(unreadable)?;
        file.write_all(line.as_bytes()).and_then(|()| file.sync_data()).map_err(unreadable)?;
        self.last = Some(checkpoint.clone());
        Ok(())
    }
}
