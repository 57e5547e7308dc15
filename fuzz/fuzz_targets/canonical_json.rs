//! Canonical JSON and content fingerprints, from any bytes that are JSON: the canonical text parses back to
//! the same value and is its own canonical form; the fingerprint is SHA-256 of that text in 64 hex digits, and
//! the same content written in another key order, with spacing and with every character escaped, has the same
//! fingerprint.
#![no_main]
use domain::canonical_json::to_canonical_string;
use domain::fingerprint::fingerprint;
use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::fmt::Write;

fuzz_target!(|data: &[u8]| {
    let Ok(value) = serde_json::from_slice::<Value>(data) else { return };
    let canonical = to_canonical_string(&value);
    let back: Value = serde_json::from_str(&canonical).expect("canonical JSON is JSON");
    assert_eq!(back, value, "canonical JSON parses back to the same value: {canonical}");
    assert_eq!(to_canonical_string(&back), canonical, "the canonical form is its own canonical form");

    let print = fingerprint(&value);
    assert_eq!(print.len(), 64);
    assert!(print.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)), "lower-case hex: {print}");
    assert_eq!(print, hex::encode(Sha256::digest(canonical.as_bytes())));

    // The same content as another sender could write it.
    let seed = data.iter().fold(0usize, |h, &b| h.wrapping_mul(31).wrapping_add(b as usize));
    let mut other = String::new();
    write_reordered(&value, seed, &mut other);
    let reordered: Value = serde_json::from_str(&other).expect("the reordered text is JSON");
    assert_eq!(reordered, value, "the reordered text holds the same value: {other}");
    assert_eq!(fingerprint(&reordered), print, "key order, spacing and escaping do not change the fingerprint: {other}");
});

/// Objects with their keys rotated (and reversed when `seed` is odd), spaces around every token, strings with
/// every character as a `\u` escape.
fn write_reordered(value: &Value, seed: usize, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<_> = map.iter().collect();
            if !entries.is_empty() {
                let n = entries.len();
                entries.rotate_left(seed % n);
            }
            if seed % 2 == 1 {
                entries.reverse();
            }
            out.push_str("{ ");
            for (i, (key, item)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push_str(" ,\n ");
                }
                write_escaped(key, out);
                out.push_str(" :\t");
                write_reordered(item, seed / 2, out);
            }
            out.push_str(" }");
        }
        Value::Array(items) => {
            out.push_str("[ ");
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(" , ");
                }
                write_reordered(item, seed / 3, out);
            }
            out.push_str(" ]");
        }
        Value::String(text) => write_escaped(text, out),
        scalar => out.push_str(&scalar.to_string()),
    }
}

fn write_escaped(text: &str, out: &mut String) {
    out.push('"');
    for unit in text.encode_utf16() {
        write!(out, "\\u{unit:04X}").unwrap();
    }
    out.push('"');
}
