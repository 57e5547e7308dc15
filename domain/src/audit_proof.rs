//! Signed checkpoints: the chain's head at a moment (sequence number and hash), signed with an Ed25519 key that
//! lives outside the database. The chain proves that no row was edited alone; a checkpoint proves that the
//! history up to it is the history that existed when it was signed: rewriting an older event changes every later
//! hash, and whoever rewrites cannot sign the new one (Certificate Transparency's signed tree heads).
//!
//! What is signed is a few lines of text (`checkpoint_message`), so that anyone can check a checkpoint with a
//! stock Ed25519 library and the public key (docs/security.md shows it in Python).
use crate::checkpoint::rfc3339;
pub use crate::checkpoint::{SignedCheckpoint, checkpoint_message, digests_in};
use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use chrono::{DateTime, SubsecRound, Utc};
use ed25519_dalek::pkcs8::spki::der::pem::LineEnding;
use ed25519_dalek::pkcs8::{DecodePrivateKey, DecodePublicKey, EncodePrivateKey, EncodePublicKey};
use ed25519_dalek::{Signature, Signer, SigningKey, Verifier, VerifyingKey};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// A new key names the key it replaces: signed by the new key (so that whoever trusts the new key also trusts
/// the checkpoints of the old one) and, while the old key is still at hand, by the old key (so that whoever
/// trusts the old key learns the new one).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyStatement {
    pub old_key: String,
    pub new_key: String,
    pub at: DateTime<Utc>,
    pub new_signature: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub old_signature: Option<String>,
    /// The last event the old key's signer vouched for (sequence number and hash): its memory carries over to
    /// the new key from there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vouched: Option<(i64, String)>,
}

impl KeyStatement {
    /// `old_key` and `new_key` are the public keys, base64 of their 32 bytes. A statement that names the last
    /// vouched event says so in one more line (v2); one without keeps the v1 text it was signed with.
    pub fn message(&self) -> String {
        let (old, new, at) = (&self.old_key, &self.new_key, rfc3339(self.at));
        match &self.vouched {
            None => format!("rerun-gate audit key rotation v1\nold {old}\nnew {new}\nat {at}\n"),
            Some((seq, hash)) => {
                format!("rerun-gate audit key rotation v2\nold {old}\nnew {new}\nat {at}\nvouched {seq} {hash}\n")
            }
        }
    }
}

/// What is wrong with a key file or a public key.
#[derive(Debug, PartialEq, Eq)]
pub struct KeyProblem(pub String);

impl std::fmt::Display for KeyProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// The private key that signs checkpoints (PKCS#8 PEM in its file). Never printed.
pub struct AuditKey(SigningKey);

impl std::fmt::Debug for AuditKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "AuditKey({})", self.public().key_id())
    }
}

impl AuditKey {
    pub fn generate() -> AuditKey {
        AuditKey(SigningKey::generate(&mut rand::rngs::OsRng))
    }

    pub fn from_pem(pem: &str) -> Result<AuditKey, KeyProblem> {
        SigningKey::from_pkcs8_pem(pem)
            .map(AuditKey)
            .map_err(|e| KeyProblem(format!("not an Ed25519 private key in PKCS#8 PEM: {e}")))
    }

    /// PKCS#8 v1 (the secret alone), which OpenSSL and Python's `cryptography` read too.
    pub fn to_pem(&self) -> zeroize::Zeroizing<String> {
        let bytes = ed25519_dalek::pkcs8::KeypairBytes { secret_key: self.0.to_bytes(), public_key: None };
        bytes.to_pkcs8_pem(LineEnding::LF).expect("an Ed25519 key always encodes")
    }

    pub fn public(&self) -> PublicKey {
        PublicKey(self.0.verifying_key())
    }

    /// Signs the chain's state at `seq` (whose event's hash is `hash`) and, given, the root of the Merkle tree
    /// of the events up to it; `at` is kept to whole seconds.
    pub fn sign(&self, seq: i64, hash: &str, root: Option<&str>, at: DateTime<Utc>) -> SignedCheckpoint {
        let mut checkpoint = SignedCheckpoint {
            seq,
            hash: hash.to_string(),
            root: root.map(str::to_string),
            at: at.trunc_subsecs(0),
            key_id: self.public().key_id(),
            signature: String::new(),
            timestamp: None,
        };
        checkpoint.signature = self.sign_text(&checkpoint.message());
        checkpoint
    }

    /// This key takes over from `old` (the old key also signs when it is given), from the last event the old
    /// key's signer vouched for, when its memory is carried over.
    pub fn succeed(
        &self,
        old: &PublicKey,
        old_key: Option<&AuditKey>,
        vouched: Option<(i64, String)>,
        at: DateTime<Utc>,
    ) -> KeyStatement {
        let mut statement = KeyStatement {
            old_key: old.base64(),
            new_key: self.public().base64(),
            at: at.trunc_subsecs(0),
            new_signature: String::new(),
            old_signature: None,
            vouched,
        };
        statement.new_signature = self.sign_text(&statement.message());
        statement.old_signature = old_key.map(|k| k.sign_text(&statement.message()));
        statement
    }

    fn sign_text(&self, text: &str) -> String {
        BASE64.encode(self.0.sign(text.as_bytes()).to_bytes())
    }
}

/// A public key: the one `server audit public-key` prints, and auditors keep.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PublicKey(VerifyingKey);

impl PublicKey {
    /// SubjectPublicKeyInfo PEM (`-----BEGIN PUBLIC KEY-----`), as OpenSSL and Python's `cryptography` read it.
    pub fn from_pem(pem: &str) -> Result<PublicKey, KeyProblem> {
        VerifyingKey::from_public_key_pem(pem.trim())
            .map(PublicKey)
            .map_err(|e| KeyProblem(format!("not an Ed25519 public key in PEM: {e}")))
    }

    pub fn to_pem(&self) -> String {
        self.0.to_public_key_pem(LineEnding::LF).expect("an Ed25519 key always encodes")
    }

    fn from_base64(text: &str) -> Option<PublicKey> {
        let bytes: [u8; 32] = BASE64.decode(text).ok()?.try_into().ok()?;
        VerifyingKey::from_bytes(&bytes).ok().map(PublicKey)
    }

    fn base64(&self) -> String {
        BASE64.encode(self.0.as_bytes())
    }

    /// SHA-256 of the key's 32 bytes, hex: what the admin page shows.
    pub fn fingerprint(&self) -> String {
        hex::encode(Sha256::digest(self.0.as_bytes()))
    }

    /// The first 16 hex digits of the fingerprint: what each checkpoint names.
    pub fn key_id(&self) -> String {
        self.fingerprint()[..16].to_string()
    }

    fn verifies(&self, text: &str, signature: &str) -> bool {
        let Some(bytes) = BASE64.decode(signature).ok().and_then(|b| <[u8; 64]>::try_from(b).ok()) else {
            return false;
        };
        self.0.verify(text.as_bytes(), &Signature::from_bytes(&bytes)).is_ok()
    }
}

/// The keys whose checkpoints a verifier accepts: the one it was given, and the keys that key statements link
/// to it (a new key vouching for its predecessor, or an old key handing over to its successor).
#[derive(Clone, Debug)]
pub struct TrustedKeys(Vec<PublicKey>);

impl TrustedKeys {
    pub fn new(trusted: PublicKey, statements: &[KeyStatement]) -> TrustedKeys {
        let mut keys = vec![trusted];
        loop {
            let before = keys.len();
            for s in statements {
                let (Some(old), Some(new)) = (PublicKey::from_base64(&s.old_key), PublicKey::from_base64(&s.new_key))
                else {
                    continue;
                };
                let message = s.message();
                let by_new = new.verifies(&message, &s.new_signature);
                let by_old = s.old_signature.as_deref().is_some_and(|sig| old.verifies(&message, sig));
                if by_new && keys.contains(&new) && !keys.contains(&old) {
                    keys.push(old);
                } else if by_new && by_old && keys.contains(&old) && !keys.contains(&new) {
                    keys.push(new);
                }
            }
            if keys.len() == before {
                return TrustedKeys(keys);
            }
        }
    }

    pub fn verifies(&self, checkpoint: &SignedCheckpoint) -> bool {
        self.0
            .iter()
            .any(|k| k.key_id() == checkpoint.key_id && k.verifies(&checkpoint.message(), &checkpoint.signature))
    }
}

/// Why the trail does not match its signed checkpoints; `seq` is the first sequence number that no longer does.
#[derive(Debug, PartialEq, Eq)]
pub enum ProofProblem {
    NotSigned {
        seq: i64,
        key_id: String,
    },
    Rewritten {
        seq: i64,
        signed_at: DateTime<Utc>,
        since: i64,
    },
    Removed {
        seq: i64,
        signed_at: DateTime<Utc>,
        last: i64,
    },
    /// No checkpoint vouches for any of the events up to `last`.
    NoCheckpoint {
        last: i64,
    },
}

impl ProofProblem {
    pub fn seq(&self) -> i64 {
        match self {
            ProofProblem::NotSigned { seq, .. }
            | ProofProblem::Rewritten { seq, .. }
            | ProofProblem::Removed { seq, .. } => *seq,
            ProofProblem::NoCheckpoint { last } => *last,
        }
    }
}

impl std::fmt::Display for ProofProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ProofProblem::NotSigned { seq, key_id } => {
                write!(f, "the checkpoint at event {seq} is not signed by a trusted key (key {key_id})")
            }
            ProofProblem::Rewritten { seq, signed_at, since } => write!(
                f,
                "event {seq} no longer matches the checkpoint signed at {}: \
                 the history after event {since} was rewritten",
                rfc3339(*signed_at)
            ),
            ProofProblem::Removed { seq, signed_at, last } => write!(
                f,
                "a checkpoint signed at {} covers event {seq}, but the trail ends at event {last}: events were removed",
                rfc3339(*signed_at)
            ),
            ProofProblem::NoCheckpoint { last } => {
                write!(f, "no signed checkpoint vouches for events 1 to {last}: nothing proves this history")
            }
        }
    }
}

/// What the comparison found when everything matched.
#[derive(Debug, PartialEq, Eq)]
pub struct ProofSummary {
    /// Checkpoints whose event was seen and matched.
    pub matched: usize,
    /// Checkpoints whose event a filtered export does not hold.
    pub unchecked: usize,
    /// The newest checkpoint that matched.
    pub latest: Option<(i64, DateTime<Utc>)>,
}

/// Compares the trail's events, given in sequence order, with the signed checkpoints: every checkpoint must be
/// signed by a trusted key, and the event at its sequence number must have its hash.
pub struct CheckpointCheck {
    checkpoints: Vec<SignedCheckpoint>,
    next: usize,
    matched: usize,
    unchecked: usize,
    since: i64,
    latest: Option<(i64, DateTime<Utc>)>,
}

impl CheckpointCheck {
    pub fn new(mut checkpoints: Vec<SignedCheckpoint>, keys: &TrustedKeys) -> Result<CheckpointCheck, ProofProblem> {
        checkpoints.sort_by_key(|c| c.seq);
        if let Some(c) = checkpoints.iter().find(|c| !keys.verifies(c)) {
            return Err(ProofProblem::NotSigned { seq: c.seq, key_id: c.key_id.clone() });
        }
        Ok(CheckpointCheck { checkpoints, next: 0, matched: 0, unchecked: 0, since: 0, latest: None })
    }

    pub fn event(&mut self, seq: i64, hash: &str) -> Result<(), ProofProblem> {
        while let Some(c) = self.checkpoints.get(self.next).filter(|c| c.seq <= seq) {
            if c.seq < seq {
                self.unchecked += 1;
            } else if c.hash != hash {
                return Err(ProofProblem::Rewritten { seq, signed_at: c.at, since: self.since });
            } else {
                self.matched += 1;
                self.since = seq;
                self.latest = Some((seq, c.at));
            }
            self.next += 1;
        }
        Ok(())
    }

    /// `last` is the last event seen; `whole` says the events were the whole trail (not a filtered part), so
    /// that a checkpoint beyond its end means events were removed.
    pub fn finish(self, last: i64, whole: bool) -> Result<ProofSummary, ProofProblem> {
        let beyond = &self.checkpoints[self.next..];
        match beyond.first() {
            Some(c) if whole => Err(ProofProblem::Removed { seq: c.seq, signed_at: c.at, last }),
            _ => Ok(ProofSummary {
                matched: self.matched,
                unchecked: self.unchecked + beyond.len(),
                latest: self.latest,
            }),
        }
    }
}

/// An export's proof: its checkpoints and key statements (the lines before its rows), checked against its rows
/// with the public key an auditor trusts, and against checkpoints kept from earlier exports.
pub struct ExportProof {
    public_key: Option<PublicKey>,
    checkpoints: Vec<SignedCheckpoint>,
    statements: Vec<KeyStatement>,
    check: Option<CheckpointCheck>,
}

impl ExportProof {
    pub fn new(public_key: Option<PublicKey>, kept: Vec<SignedCheckpoint>) -> ExportProof {
        ExportProof { public_key, checkpoints: kept, statements: Vec::new(), check: None }
    }

    /// The checkpoints an export holds (to keep them for a later check).
    pub fn kept_from(lines: impl Iterator<Item = String>) -> Vec<SignedCheckpoint> {
        lines
            .filter_map(|line| {
                serde_json::from_str::<serde_json::Value>(&line).ok()?.get_mut("checkpoint").map(std::mem::take)
            })
            .filter_map(|value| serde_json::from_value(value).ok())
            .collect()
    }

    pub fn checkpoint(&mut self, value: serde_json::Value) -> Result<(), String> {
        let checkpoint = serde_json::from_value(value).map_err(|e| format!("a checkpoint cannot be read: {e}"))?;
        self.checkpoints.push(checkpoint);
        Ok(())
    }

    pub fn statement(&mut self, value: serde_json::Value) -> Result<(), String> {
        let statement = serde_json::from_value(value).map_err(|e| format!("a key statement cannot be read: {e}"))?;
        self.statements.push(statement);
        Ok(())
    }

    /// How many checkpoints the export and the kept files hold.
    pub fn checkpoints(&self) -> usize {
        self.checkpoints.len()
    }

    /// Each row in order; the checkpoints' signatures are checked at the first.
    pub fn row(&mut self, seq: i64, hash: &str) -> Result<(), ProofProblem> {
        self.start()?;
        self.check.as_mut().map_or(Ok(()), |check| check.event(seq, hash))
    }

    /// Once every checkpoint and statement is read: checks their signatures.
    fn start(&mut self) -> Result<(), ProofProblem> {
        if let (Some(public_key), None) = (self.public_key, &self.check) {
            let keys = TrustedKeys::new(public_key, &self.statements);
            self.check = Some(CheckpointCheck::new(std::mem::take(&mut self.checkpoints), &keys)?);
        }
        Ok(())
    }

    /// `None` without a public key. With one, at least one checkpoint must match: a file without any proves
    /// nothing about its history.
    pub fn finish(mut self, last: i64, whole: bool) -> Result<Option<ProofSummary>, ProofProblem> {
        if self.public_key.is_none() {
            return Ok(None);
        }
        self.start()?;
        let summary = self.check.map(|check| check.finish(last, whole)).transpose()?;
        match summary {
            Some(summary) if summary.matched > 0 => Ok(Some(summary)),
            _ => Err(ProofProblem::NoCheckpoint { last }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn at(hour: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 12, 2, hour, 0, 0).unwrap()
    }

    fn hash(n: i64) -> String {
        format!("{n:064x}")
    }

    #[test]
    fn a_key_survives_its_file_and_signs_what_its_public_key_verifies() {
        let key = AuditKey::from_pem(&AuditKey::generate().to_pem()).unwrap();
        let public = PublicKey::from_pem(&key.public().to_pem()).unwrap();
        let checkpoint = key.sign(7, &hash(7), None, at(9));
        assert_eq!(checkpoint.key_id, public.key_id());
        let keys = TrustedKeys::new(public, &[]);
        assert!(keys.verifies(&checkpoint));
        let moved = SignedCheckpoint { seq: 8, ..checkpoint.clone() };
        assert!(!keys.verifies(&moved), "a signature binds the sequence number");
        let other = TrustedKeys::new(AuditKey::generate().public(), &[]);
        assert!(!other.verifies(&checkpoint), "another key's checkpoint");
        assert!(AuditKey::from_pem("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n").is_err());
    }

    #[test]
    fn the_signed_text_spells_the_time_as_the_export_does() {
        let checkpoint = AuditKey::generate().sign(1, &hash(1), None, at(9) + chrono::Duration::milliseconds(450));
        let json = serde_json::to_value(&checkpoint).unwrap();
        assert_eq!(json["at"], "2026-12-02T09:00:00Z");
        assert!(checkpoint.message().contains("\nat 2026-12-02T09:00:00Z\n"), "{}", checkpoint.message());
    }

    #[test]
    fn a_rewritten_event_is_named_by_the_first_checkpoint_at_or_after_it() {
        let key = AuditKey::generate();
        let keys = TrustedKeys::new(key.public(), &[]);
        let checkpoints = vec![key.sign(3, &hash(3), None, at(9)), key.sign(6, &hash(6), None, at(10))];
        let mut check = CheckpointCheck::new(checkpoints.clone(), &keys).unwrap();
        for seq in 1..=4 {
            check.event(seq, &hash(seq)).unwrap();
        }
        assert_eq!(check.event(5, "forged-5"), Ok(()), "no checkpoint at 5");
        assert_eq!(check.event(6, "forged-6"), Err(ProofProblem::Rewritten { seq: 6, signed_at: at(10), since: 3 }));

        let mut cut = CheckpointCheck::new(checkpoints, &keys).unwrap();
        for seq in 1..=4 {
            cut.event(seq, &hash(seq)).unwrap();
        }
        assert_eq!(cut.finish(4, true), Err(ProofProblem::Removed { seq: 6, signed_at: at(10), last: 4 }));
    }

    #[test]
    fn a_checkpoint_with_a_changed_hash_or_no_trusted_signature_is_refused() {
        let key = AuditKey::generate();
        let keys = TrustedKeys::new(key.public(), &[]);
        let mut changed = key.sign(3, &hash(3), None, at(9));
        changed.hash = hash(4);
        assert_eq!(
            CheckpointCheck::new(vec![changed.clone()], &keys).err(),
            Some(ProofProblem::NotSigned { seq: 3, key_id: key.public().key_id() })
        );
    }

    #[test]
    fn a_filtered_part_checks_the_checkpoints_it_holds() {
        let key = AuditKey::generate();
        let keys = TrustedKeys::new(key.public(), &[]);
        let mut check =
            CheckpointCheck::new(vec![key.sign(2, &hash(2), None, at(9)), key.sign(5, &hash(5), None, at(10))], &keys)
                .unwrap();
        check.event(5, &hash(5)).unwrap();
        assert_eq!(check.finish(5, false), Ok(ProofSummary { matched: 1, unchecked: 1, latest: Some((5, at(10))) }));
    }

    #[test]
    fn a_new_key_vouches_for_the_old_and_the_old_hands_over_to_the_new() {
        let (old, new) = (AuditKey::generate(), AuditKey::generate());
        let by_old = old.sign(3, &hash(3), None, at(9));
        let by_new = new.sign(6, &hash(6), None, at(10));
        let statement = new.succeed(&old.public(), Some(&old), None, at(10));
        let trusting_new = TrustedKeys::new(new.public(), std::slice::from_ref(&statement));
        assert!(trusting_new.verifies(&by_old) && trusting_new.verifies(&by_new));
        let trusting_old = TrustedKeys::new(old.public(), std::slice::from_ref(&statement));
        assert!(trusting_old.verifies(&by_new), "the old key signed the hand-over");

        let unsigned_by_old = new.succeed(&old.public(), None, None, at(10));
        assert!(!TrustedKeys::new(old.public(), &[unsigned_by_old]).verifies(&by_new), "anyone can claim succession");
        let mut forged = statement.clone();
        forged.new_key = AuditKey::generate().public().base64();
        assert!(!TrustedKeys::new(new.public(), &[forged]).verifies(&by_old), "a statement's keys are signed");
    }

    #[test]
    fn a_digest_saved_from_an_email_reads_back_as_the_checkpoint_it_was_made_of() {
        let key = AuditKey::generate();
        let checkpoint = key.sign(42, "ab12", None, at(7));
        let mail = format!(
            "Subject: digest\n\n{}",
            checkpoint.digest().lines().map(|l| format!("> {l}\n")).collect::<String>()
        );
        assert_eq!(digests_in(&mail), vec![checkpoint.clone()]);
        assert!(TrustedKeys::new(key.public(), &[]).verifies(&digests_in(&mail)[0]));
        assert_eq!(
            digests_in(&mail.replace("seq 42", "seq 43")).len(),
            1,
            "read back, and then refused by its signature"
        );
        assert!(!TrustedKeys::new(key.public(), &[]).verifies(&digests_in(&mail.replace("seq 42", "seq 43"))[0]));
        assert!(digests_in("rerun-gate audit checkpoint v1\nseq x").is_empty());
    }

    #[test]
    fn a_version_2_checkpoint_signs_the_trees_root_and_reads_back_from_its_digest() {
        let key = AuditKey::generate();
        let keys = TrustedKeys::new(key.public(), &[]);
        let checkpoint = key.sign(42, &hash(42), Some(&hash(7)), at(7));
        assert!(checkpoint.message().starts_with("rerun-gate audit checkpoint v2\nseq 42\n"));
        assert_eq!(checkpoint.tree_head(), Some((42, hash(7).as_str())));
        assert_eq!(digests_in(&checkpoint.digest()), vec![checkpoint.clone()]);
        assert!(keys.verifies(&checkpoint));
        let other_root = SignedCheckpoint { root: Some(hash(8)), ..checkpoint.clone() };
        assert!(!keys.verifies(&other_root), "the signature binds the root");
        let without_root = SignedCheckpoint { root: None, ..checkpoint };
        assert!(!keys.verifies(&without_root), "a version 2 signature is no version 1 one");
        assert!(digests_in("rerun-gate audit checkpoint v2\nseq 1\nhash ab\nat 2026-12-02T07:00:00Z").is_empty());
    }
}
