//! Standard Webhooks headers and signatures: whatever secret text, headers, body and clock arrive, parsing and
//! verifying never panic and only accept within the tolerance; a message signed with `sign` verifies (among
//! other signatures, with a padded timestamp, under a rotation's list of secrets), and one changed body byte,
//! another message ID or a timestamp outside the tolerance does not.
#![no_main]
use domain::webhooks::{Headers, Secret, SignatureError, TOLERANCE_SECONDS, verify};
use arbitrary::Arbitrary;
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use chrono::{DateTime, Utc};
use libfuzzer_sys::fuzz_target;

/// About ±250,000 years, inside chrono's range.
const CLOCK_RANGE: i64 = 8_000_000_000_000;

#[derive(Arbitrary, Debug)]
struct Input<'a> {
    secret_text: &'a str,
    id: Option<&'a str>,
    timestamp: Option<&'a str>,
    signature: Option<&'a str>,
    now: i64,
    key: Vec<u8>,
    message_id: &'a str,
    skew: i16,
    other_signatures: Vec<&'a str>,
    position: u8,
    flip_at: usize,
    flip_bits: u8,
    body: &'a [u8],
}

fuzz_target!(|input: Input<'_>| {
    let now_seconds = input.now % CLOCK_RANGE;
    let now = DateTime::<Utc>::from_timestamp(now_seconds, 0).expect("inside chrono's range");

    // Whatever arrives.
    let one = Secret::parse(input.secret_text);
    let list = Secret::parse_list(input.secret_text);
    if let Ok(secrets) = &list {
        assert!(!secrets.is_empty(), "a parsed list holds a secret");
    }
    if input.secret_text.split_whitespace().count() == 1 {
        assert_eq!(one.is_ok(), list.is_ok(), "one secret parses alone as in a list");
    }
    let secrets = list.unwrap_or_default();
    let headers = Headers { id: input.id, timestamp: input.timestamp, signature: input.signature };
    match verify(&secrets, &headers, input.body, now) {
        Ok(sent_at) => {
            assert!(!secrets.is_empty());
            assert!((now - sent_at).num_seconds().abs() <= TOLERANCE_SECONDS);
        }
        Err(SignatureError::MissingHeader) => {
            assert!(input.id.is_none() || input.timestamp.is_none() || input.signature.is_none())
        }
        Err(_) => {}
    }

    // A message signed by a secret of ours.
    let mut key = input.key;
    if key.len() < 16 {
        key.resize(16, 0x5a);
    }
    let secret_text = format!("whsec_{}", STANDARD.encode(&key));
    let secret = Secret::parse(&secret_text).expect("whsec_ and the base64 of 16 bytes or more is a secret");
    let sent = now_seconds + i64::from(input.skew) % (TOLERANCE_SECONDS + 1);
    let sent_at = DateTime::<Utc>::from_timestamp(sent, 0).unwrap();
    let signature = secret.sign(input.message_id, sent, input.body);
    let mut signatures: Vec<&str> = input.other_signatures.clone();
    signatures.insert(usize::from(input.position) % (signatures.len() + 1), &signature);
    let signature_header = signatures.join(" ");
    let timestamp = sent.to_string();
    let signed = |id: &str, timestamp: &str, body: &[u8], secrets: &[Secret]| {
        let headers = Headers { id: Some(id), timestamp: Some(timestamp), signature: Some(&signature_header) };
        verify(secrets, &headers, body, now)
    };
    let ours = std::slice::from_ref(&secret);
    assert_eq!(signed(input.message_id, &timestamp, input.body, ours), Ok(sent_at), "a signed message verifies");
    assert_eq!(signed(input.message_id, &format!(" {timestamp}\t"), input.body, ours), Ok(sent_at), "padded timestamp");
    let rotation = Secret::parse_list(&format!("{} {secret_text}", input.secret_text.trim()));
    if let Ok(rotation) = rotation {
        assert_eq!(signed(input.message_id, &timestamp, input.body, &rotation), Ok(sent_at), "during a rotation");
    }

    // ... and changed.
    if !input.body.is_empty() {
        let mut tampered = input.body.to_vec();
        let at = input.flip_at % tampered.len();
        tampered[at] ^= input.flip_bits.max(1);
        assert_eq!(signed(input.message_id, &timestamp, &tampered, ours), Err(SignatureError::NoMatch), "one byte changed");
    }
    let other_id = format!("{}x", input.message_id);
    assert_eq!(signed(&other_id, &timestamp, input.body, ours), Err(SignatureError::NoMatch), "another message ID");
    let late = now_seconds - TOLERANCE_SECONDS - 1 - i64::from(input.skew.unsigned_abs());
    let late_signature = secret.sign(input.message_id, late, input.body);
    let headers = Headers { id: Some(input.message_id), timestamp: Some(&late.to_string()), signature: Some(&late_signature) };
    assert_eq!(verify(ours, &headers, input.body, now), Err(SignatureError::OutsideTolerance), "too old");
});
