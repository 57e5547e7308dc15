//! What the audit trail keeps of the name typed at a failed sign-in: the account when the name is one, otherwise
//! only "unknown name" and a keyed hash of it. A password typed into the name field is not kept for ever, and
//! repeated tries of the same text can still be tied together.
use hmac::{Hmac, Mac};
use sha2::Sha256;

pub const UNKNOWN: &str = "unknown name";

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ClaimedName {
    Account(String),
    /// The first 16 bytes of HMAC-SHA256(key, typed name), in hex.
    Unknown {
        hash: String,
    },
}

impl ClaimedName {
    pub fn of(typed: &str, is_an_account: bool, key: &[u8]) -> Self {
        if is_an_account {
            return ClaimedName::Account(typed.to_string());
        }
        let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes keys of any length");
        mac.update(typed.as_bytes());
        ClaimedName::Unknown { hash: hex::encode(&mac.finalize().into_bytes()[..16]) }
    }

    /// The actor's label and the event's object id.
    pub fn label(&self) -> &str {
        match self {
            ClaimedName::Account(name) => name,
            ClaimedName::Unknown { .. } => UNKNOWN,
        }
    }

    /// Added to the event's details: the keyed hash of an unknown name.
    pub fn hash(&self) -> Option<&str> {
        match self {
            ClaimedName::Account(_) => None,
            ClaimedName::Unknown { hash } => Some(hash),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_account_is_named_and_an_unknown_name_is_only_hashed() {
        assert_eq!(ClaimedName::of("sato", true, b"k").label(), "sato");
        let unknown = ClaimedName::of("my-password", false, b"k");
        assert_eq!(unknown.label(), UNKNOWN);
        assert!(!format!("{unknown:?}").contains("my-password"));
        assert_eq!(unknown.hash().unwrap().len(), 32);
    }

    #[test]
    fn the_hash_depends_on_the_text_and_on_the_key() {
        let hash = |typed: &str, key: &[u8]| ClaimedName::of(typed, false, key).hash().unwrap().to_string();
        assert_eq!(hash("a", b"k"), hash("a", b"k"));
        assert_ne!(hash("a", b"k"), hash("b", b"k"));
        assert_ne!(hash("a", b"k"), hash("a", b"other key"));
    }
}
