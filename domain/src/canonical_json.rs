//! Canonical JSON: object keys sorted by their UTF-8 bytes, no insignificant whitespace, serde_json's
//! number and string escaping. The same bytes on every machine, so that hashes of it can be checked
//! offline (audit chain) and compared (idempotency fingerprints).
use serde_json::Value;

pub fn to_canonical_string(value: &Value) -> String {
    let mut out = String::new();
    write_value(value, &mut out);
    out
}

fn write_value(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<_> = map.iter().collect();
            entries.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
            out.push('{');
            for (i, (key, item)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                write_value(item, out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_value(item, out);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn keys_are_sorted_at_every_depth_and_whitespace_is_dropped() {
        let value = json!({"b": 1, "a": {"z": [3, {"y": true, "x": null}], "c": "é"}});
        assert_eq!(to_canonical_string(&value), r#"{"a":{"c":"é","z":[3,{"x":null,"y":true}]},"b":1}"#);
    }

    // Found by the canonical_json fuzz target: without serde_json's `float_roundtrip` feature a float written
    // with all its digits read back as a neighbouring number, so the canonical text was not a fixed point.
    #[test]
    fn a_float_reads_back_as_the_same_number_so_canonical_text_is_its_own_canonical_text() {
        for text in ["154326789012345679901234567890", "7.291122019513881e-304", "[1.5432678901234567e29]"] {
            let value: Value = serde_json::from_str(text).unwrap();
            let canonical = to_canonical_string(&value);
            let back: Value = serde_json::from_str(&canonical).unwrap();
            assert_eq!(back, value, "{text} as {canonical}");
            assert_eq!(to_canonical_string(&back), canonical);
        }
    }

    #[test]
    fn the_same_content_in_another_key_order_gives_the_same_text() {
        let one: Value = serde_json::from_str(r#"{"amount": 4000, "order": "A-1"}"#).unwrap();
        let two: Value = serde_json::from_str(r#"{"order":"A-1","amount":4000}"#).unwrap();
        assert_eq!(to_canonical_string(&one), to_canonical_string(&two));
    }
}
