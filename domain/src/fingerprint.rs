//! Content fingerprints: SHA-256 of the canonical JSON, so that the same content in another key order or
//! spacing has the same fingerprint, and any real change has another.
use super::canonical_json::to_canonical_string;
use serde_json::Value;
use sha2::{Digest, Sha256};

pub fn fingerprint(value: &Value) -> String {
    hex::encode(Sha256::digest(to_canonical_string(value).as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn key_order_and_spacing_do_not_change_the_fingerprint_but_the_amount_does() {
        let a: Value = serde_json::from_str(r#"{"order":"A-1", "amount": 4000}"#).unwrap();
        let b = json!({"amount": 4000, "order": "A-1"});
        let c = json!({"amount": 5000, "order": "A-1"});
        assert_eq!(fingerprint(&a), fingerprint(&b));
        assert_ne!(fingerprint(&a), fingerprint(&c));
        assert_eq!(fingerprint(&a).len(), 64);
    }
}
