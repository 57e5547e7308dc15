//! The signer's memory (`<key file>.witness`): every checkpoint the server signs, appended and flushed to disk
//! before it counts as signed, in a file beside the key (same owner, same protection). The signer takes its
//! word, not the database's, for what it vouched for before: whoever keeps the database can remove the newest
//! events and the checkpoints that vouched for them, but not this file's lines (they live with the key).
//!
//! One JSON object per line. Checkpoints and key statements have the shape of an export's proof lines
//! (`{"checkpoint": …}`, `{"key_statement": …}`); the alarm (`{"alarm": …}`) stands across restarts until a
//! person's resolution (`{"resolution": …}`) names which history is true.
use chrono::{DateTime, Utc};
use domain::audit_proof::{AuditKey, KeyStatement, SignedCheckpoint, TrustedKeys};
use domain::signer_alarm::{Resolution, SignerAlarm, TrueHistory};
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
    /// The key it names signed the lines before it: a rotation carried the memory over.
    KeyStatement(KeyStatement),
    Alarm {
        at: DateTime<Utc>,
        alarm: SignerAlarm,
    },
    Resolution(Resolution),
    /// The checkpoint at `seq` went to the auditors as a digest.
    Digest {
        seq: i64,
        at: DateTime<Utc>,
    },
}

/// The memory as read at start: the file, the point it vouches for, and the alarm that stands.
#[derive(Debug)]
pub struct Witness {
    path: PathBuf,
    vouched: Option<(i64, String)>,
    /// The newest checkpoint in the memory (what a digest sends).
    newest: Option<SignedCheckpoint>,
    standing: Option<SignerAlarm>,
    last_digest: Option<(i64, DateTime<Utc>)>,
}

impl Witness {
    /// A new, empty memory for a new key (its folder exists: the key's); an existing file is never replaced.
    pub fn create(path: &Path) -> Result<Witness, String> {
        new_file(path).and_then(|file| file.sync_all()).map_err(|e| match e.kind() {
            std::io::ErrorKind::AlreadyExists => {
                format!("{} already exists: the signer's memory is never replaced", path.display())
            }
            _ => format!("{}: {e}", path.display()),
        })?;
        Ok(Witness::empty(path))
    }

    /// A memory that vouches for nothing yet.
    fn empty(path: &Path) -> Witness {
        Witness { path: path.to_path_buf(), vouched: None, newest: None, standing: None, last_digest: None }
    }

    /// A new memory for a key that replaces another: the old memory's lines, then the statement that hands over
    /// from the old key to the new one (naming the last checkpoint the old one vouched for).
    pub fn carry_over(path: &Path, old: &Path, statement: &KeyStatement) -> Result<(), String> {
        let lines = std::fs::read(old).map_err(|e| format!("{}: {e}", old.display()))?;
        let mut file = new_file(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let handover = line(&Line::KeyStatement(statement.clone()));
        file.write_all(&lines)
            .and_then(|()| file.write_all(handover.as_bytes()))
            .and_then(|()| file.sync_all())
            .map_err(|e| format!("{}: {e}", path.display()))
    }

    /// Reads the memory. Every checkpoint must be signed by `key` or by a key its statements hand over from (the
    /// file is the key's: a line it did not sign means the file was changed).
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
        let mut lines = Vec::new();
        for (n, text) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
            let line: Line = serde_json::from_str(text).map_err(|e| unreadable(format!("line {}: {e}", n + 1)))?;
            lines.push((n + 1, line));
        }
        let statements: Vec<KeyStatement> = lines
            .iter()
            .filter_map(|(_, l)| match l {
                Line::KeyStatement(s) => Some(s.clone()),
                _ => None,
            })
            .collect();
        let trusted = TrustedKeys::new(key.public(), &statements);
        let mut witness = Witness::empty(path);
        for (n, line) in lines {
            match line {
                Line::Checkpoint(c) if !trusted.verifies(&c) => {
                    return Err(unreadable(format!("line {n} is not signed by this key or one it took over from")));
                }
                Line::Checkpoint(c) => witness.vouch(c),
                Line::KeyStatement(_) => {}
                Line::Alarm { alarm, .. } => witness.standing = Some(alarm),
                Line::Resolution(resolution) => witness.settle(&resolution),
                Line::Digest { seq, at } => witness.last_digest = Some((seq, at)),
            }
        }
        Ok(witness)
    }

    /// The newest event vouched for (sequence number and hash): the database must still hold it.
    pub fn vouched(&self) -> Option<(i64, &str)> {
        self.vouched.as_ref().map(|(seq, hash)| (*seq, hash.as_str()))
    }

    /// The alarm raised and not yet resolved.
    pub fn standing(&self) -> Option<&SignerAlarm> {
        self.standing.as_ref()
    }

    /// Appends a checkpoint and waits until it is on disk: only then does it count as signed.
    pub fn remember(&mut self, checkpoint: &SignedCheckpoint) -> Result<(), WitnessProblem> {
        self.append(&Line::Checkpoint(checkpoint.clone()))?;
        self.vouch(checkpoint.clone());
        Ok(())
    }

    /// Keeps the alarm, so that it stands across restarts until a person resolves it.
    pub fn raise(&mut self, alarm: &SignerAlarm, at: DateTime<Utc>) -> Result<(), WitnessProblem> {
        self.append(&Line::Alarm { at, alarm: alarm.clone() })?;
        self.standing = Some(alarm.clone());
        Ok(())
    }

    /// Keeps a person's resolution: the alarm ends; when the database's history was found true, the memory goes
    /// on from the point the resolution names.
    pub fn resolve(&mut self, resolution: &Resolution) -> Result<(), WitnessProblem> {
        self.append(&Line::Resolution(resolution.clone()))?;
        self.settle(resolution);
        Ok(())
    }

    /// The newest checkpoint, and when the last digest went out (sequence number and time).
    pub fn newest(&self) -> Option<&SignedCheckpoint> {
        self.newest.as_ref()
    }

    /// The Merkle tree head the newest checkpoint signed (size and root), if it signed one (version 2).
    pub fn vouched_tree(&self) -> Option<(u64, domain::merkle::Hash)> {
        let (size, root) = self.newest.as_ref()?.tree_head()?;
        Some((size, hex::decode(root).ok()?.try_into().ok()?))
    }

    pub fn last_digest(&self) -> Option<(i64, DateTime<Utc>)> {
        self.last_digest
    }

    /// Keeps that the checkpoint at `seq` went to the auditors.
    pub fn digest_sent(&mut self, seq: i64, at: DateTime<Utc>) -> Result<(), WitnessProblem> {
        self.append(&Line::Digest { seq, at })?;
        self.last_digest = Some((seq, at));
        Ok(())
    }

    fn vouch(&mut self, checkpoint: SignedCheckpoint) {
        // An export may be signed at a head older than the newest checkpoint: the newest stays the point.
        if self.vouched.as_ref().is_none_or(|(newest, _)| checkpoint.seq >= *newest) {
            self.vouched = Some((checkpoint.seq, checkpoint.hash.clone()));
            self.newest = Some(checkpoint);
        }
    }

    fn settle(&mut self, resolution: &Resolution) {
        self.standing = None;
        if resolution.history == TrueHistory::Database {
            self.vouched = Some((resolution.seq, resolution.hash.clone()));
            self.newest = None;
        }
    }

    fn append(&self, entry: &Line) -> Result<(), WitnessProblem> {
        let unreadable =
            |e: std::io::Error| WitnessProblem::Unreadable { path: self.path.clone(), problem: e.to_string() };
        let mut file = std::fs::OpenOptions::new().append(true).open(&self.path).map_err(unreadable)?;
        file.write_all(line(entry).as_bytes()).and_then(|()| file.sync_data()).map_err(unreadable)
    }
}

/// What `server audit verify --witness` checks: the checkpoints the memory vouches for now (those before a
/// resolution that found the database's history true vouch for events a person accepted as lost), and what each
/// such resolution said.
pub fn checkpoints_to_check(text: &str) -> (Vec<SignedCheckpoint>, Vec<Resolution>) {
    let (mut checkpoints, mut resolutions) = (Vec::new(), Vec::new());
    for line in text.lines().filter_map(|l| serde_json::from_str::<Line>(l).ok()) {
        match line {
            Line::Checkpoint(c) => checkpoints.push(c),
            Line::Resolution(r) => {
                if r.history == TrueHistory::Database {
                    checkpoints.clear();
                }
                resolutions.push(r);
            }
            Line::KeyStatement(_) | Line::Alarm { .. } | Line::Digest { .. } => {}
        }
    }
    (checkpoints, resolutions)
}

fn line(entry: &Line) -> String {
    let mut text = serde_json::to_string(entry).expect("a memory line serialises");
    text.push('\n');
    text
}

fn new_file(path: &Path) -> std::io::Result<std::fs::File> {
    std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(path)
}
