//! Standard Webhooks signatures (https://www.standardwebhooks.com): HMAC-SHA256 over
//! `{webhook-id}.{webhook-timestamp}.{raw body}`, base64, sent as `v1,<signature>` (several, space-separated,
//! during a secret rotation). Checked before the body is parsed; the comparison is constant-time.
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use chrono::{DateTime, Utc};
use hmac::{Hmac, Mac};
use sha2::Sha256;

/// A message older or newer than this (seconds) is refused: a replay window, not a clock-skew excuse.
pub const TOLERANCE_SECONDS: i64 = 300;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SignatureError {
    #[error("webhook-id, webhook-timestamp or webhook-signature header is missing")]
    MissingHeader,
    #[error("webhook-timestamp is not a number of seconds")]
    BadTimestamp,
    #[error("webhook-timestamp is more than 5 minutes away from now")]
    OutsideTolerance,
    #[error("no signature matches")]
    NoMatch,
}

/// A signing secret: `whsec_` + base64 of the key bytes (the prefix is optional).
#[derive(Clone)]
pub struct Secret(Vec<u8>);

impl Secret {
    pub fn parse(text: &str) -> Result<Secret, String> {
        let encoded = text.trim().strip_prefix("whsec_").unwrap_or(text.trim());
        match STANDARD.decode(encoded) {
            Ok(bytes) if bytes.len() >= 16 => Ok(Secret(bytes)),
            Ok(_) => Err("a webhook secret must hold at least 16 bytes".into()),
            Err(_) => Err("a webhook secret must be base64 (optionally after whsec_)".into()),
        }
    }

    /// Several secrets in one value, separated by spaces (old and new during a rotation).
    pub fn parse_list(text: &str) -> Result<Vec<Secret>, String> {
        let secrets: Vec<Secret> = text.split_whitespace().map(Secret::parse).collect::<Result<_, _>>()?;
        if secrets.is_empty() { Err("no webhook secret given".into()) } else { Ok(secrets) }
    }

    fn mac(&self, id: &str, timestamp: &str, body: &[u8]) -> Hmac<Sha256> {
        let mut mac = Hmac::<Sha256>::new_from_slice(&self.0).expect("HMAC takes keys of any length");
        mac.update(id.as_bytes());
        mac.update(b".");
        mac.update(timestamp.as_bytes());
        mac.update(b".");
        mac.update(body);
        mac
    }

    /// The `webhook-signature` value for a message (`v1,<base64>`).
    pub fn sign(&self, id: &str, timestamp: i64, body: &[u8]) -> String {
        let tag = self.mac(id, &timestamp.to_string(), body).finalize().into_bytes();
        format!("v1,{}", STANDARD.encode(tag))
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(***)")
    }
}

/// The three headers of a message, as received.
pub struct Headers<'a> {
    pub id: Option<&'a str>,
    pub timestamp: Option<&'a str>,
    pub signature: Option<&'a str>,
}

/// The most `v1,` signatures of one message that are checked (QUALITY 24: bounded work before authentication).
pub const MAX_SIGNATURES: usize = 8;

/// Verifies a message against any of the secrets; returns its timestamp.
pub fn verify(
    secrets: &[Secret],
    headers: &Headers<'_>,
    body: &[u8],
    now: DateTime<Utc>,
) -> Result<DateTime<Utc>, SignatureError> {
    let (Some(id), Some(timestamp), Some(signatures)) = (headers.id, headers.timestamp, headers.signature) else {
        return Err(SignatureError::MissingHeader);
    };
    let seconds: i64 = timestamp.trim().parse().map_err(|_| SignatureError::BadTimestamp)?;
    let sent_at = DateTime::<Utc>::from_timestamp(seconds, 0).ok_or(SignatureError::BadTimestamp)?;
    if (now - sent_at).num_seconds().abs() > TOLERANCE_SECONDS {
        return Err(SignatureError::OutsideTolerance);
    }
    // A sender rotating secrets sends two or three signatures: the first few are considered, whatever follows.
    let candidates: Vec<Vec<u8>> = signatures
        .split_whitespace()
        .filter_map(|s| s.strip_prefix("v1,"))
        .filter(|b64| !b64.is_empty())
        .take(MAX_SIGNATURES)
        .filter_map(|b64| STANDARD.decode(b64).ok())
        .collect();
    for secret in secrets {
        // The body is hashed once per secret; each candidate is compared with a copy (in constant time).
        let mac = secret.mac(id, timestamp.trim(), body);
        if candidates.iter().any(|candidate| mac.clone().verify_slice(candidate).is_ok()) {
            return Ok(sent_at);
        }
    }
    Err(SignatureError::NoMatch)
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    // The example from the Standard Webhooks specification.
    const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
    const ID: &str = "msg_p5jXN8AQM9LWM0D4loKWxJek";
    const TIMESTAMP: i64 = 1614265330;
    const BODY: &[u8] = br#"{"test": 2432232314}"#;
    const SIGNATURE: &str = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=";

    fn at(seconds: i64) -> DateTime<Utc> {
        Utc.timestamp_opt(seconds, 0).unwrap()
    }

    fn headers<'a>(timestamp: &'a str, signature: &'a str) -> Headers<'a> {
        Headers { id: Some(ID), timestamp: Some(timestamp), signature: Some(signature) }
    }

    #[test]
    fn the_specification_example_signs_and_verifies() {
        let secret = Secret::parse(SECRET).unwrap();
        assert_eq!(secret.sign(ID, TIMESTAMP, BODY), SIGNATURE);
        let ts = TIMESTAMP.to_string();
        assert_eq!(verify(&[secret], &headers(&ts, SIGNATURE), BODY, at(TIMESTAMP)), Ok(at(TIMESTAMP)));
    }

    #[test]
    fn a_tampered_body_or_id_is_refused() {
        let secret = Secret::parse(SECRET).unwrap();
        let ts = TIMESTAMP.to_string();
        let tampered = br#"{"test": 2432232315}"#;
        assert_eq!(
            verify(std::slice::from_ref(&secret), &headers(&ts, SIGNATURE), tampered, at(TIMESTAMP)),
            Err(SignatureError::NoMatch)
        );
        let other_id = Headers { id: Some("msg_other"), ..headers(&ts, SIGNATURE) };
        assert_eq!(verify(&[secret], &other_id, BODY, at(TIMESTAMP)), Err(SignatureError::NoMatch));
    }

    #[test]
    fn timestamps_301_seconds_away_either_side_are_refused_and_300_is_fine() {
        let secret = Secret::parse(SECRET).unwrap();
        let ts = TIMESTAMP.to_string();
        let check = |now| verify(std::slice::from_ref(&secret), &headers(&ts, SIGNATURE), BODY, at(now));
        assert_eq!(check(TIMESTAMP + 301), Err(SignatureError::OutsideTolerance));
        assert_eq!(check(TIMESTAMP - 301), Err(SignatureError::OutsideTolerance));
        assert!(check(TIMESTAMP + 300).is_ok() && check(TIMESTAMP - 300).is_ok());
    }

    #[test]
    fn during_a_rotation_old_and_new_secrets_and_several_signatures_verify() {
        let old = Secret::parse(SECRET).unwrap();
        let new = Secret::parse("whsec_c2Vjb25kLXNlY3JldC0xMjM0NTY3ODkw").unwrap();
        let both = Secret::parse_list(&format!("{SECRET} whsec_c2Vjb25kLXNlY3JldC0xMjM0NTY3ODkw")).unwrap();
        let ts = TIMESTAMP.to_string();
        let by_new = new.sign(ID, TIMESTAMP, BODY);
        assert!(verify(&both, &headers(&ts, SIGNATURE), BODY, at(TIMESTAMP)).is_ok());
        assert!(verify(&both, &headers(&ts, &by_new), BODY, at(TIMESTAMP)).is_ok());
        let several = format!("v1,bm90LWl0 {by_new} v2,ignored");
        assert!(verify(&[new], &headers(&ts, &several), BODY, at(TIMESTAMP)).is_ok());
        assert_eq!(verify(&[old], &headers(&ts, &by_new), BODY, at(TIMESTAMP)), Err(SignatureError::NoMatch));
    }

    /// A flood of signatures costs what a handful costs: the work is compared as a ratio in one run.
    #[test]
    fn a_header_of_fifty_thousand_signatures_costs_what_eight_cost() {
        let secret = Secret::parse(SECRET).unwrap();
        let body = vec![b'x'; 64 * 1024];
        let ts = TIMESTAMP.to_string();
        let flood = vec!["v1,bm90LWl0"; 50_000].join(" ");
        let few = ["v1,bm90LWl0"; MAX_SIGNATURES].join(" ");
        let time = |signatures: &str| {
            let start = std::time::Instant::now();
            for _ in 0..5 {
                assert_eq!(
                    verify(std::slice::from_ref(&secret), &headers(&ts, signatures), &body, at(TIMESTAMP)),
                    Err(SignatureError::NoMatch)
                );
            }
            start.elapsed().as_secs_f64()
        };
        // Interleaved rounds, compared by their medians: a pause of the machine moves one round, not the answer.
        let mut rounds: [Vec<f64>; 2] = Default::default();
        for _ in 0..15 {
            rounds[0].push(time(&few));
            rounds[1].push(time(&flood));
        }
        let [few, flood] = rounds.map(|mut r| {
            r.sort_by(f64::total_cmp);
            r[r.len() / 2]
        });
        assert!(flood / few < 4.0, "50,000 signatures took {flood:.4} s, eight {few:.4} s");
        // The ninth signature is not looked at, even when it is the right one.
        let right = secret.sign(ID, TIMESTAMP, BODY);
        let late = format!("{} {right}", ["v1,bm90LWl0"; MAX_SIGNATURES].join(" "));
        assert_eq!(
            verify(std::slice::from_ref(&secret), &headers(&ts, &late), BODY, at(TIMESTAMP)),
            Err(SignatureError::NoMatch)
        );
        let empty_first = format!("v1, v1, {right}");
        assert!(verify(&[secret], &headers(&ts, &empty_first), BODY, at(TIMESTAMP)).is_ok(), "empty ones are skipped");
    }

    #[test]
    fn missing_headers_and_garbage_are_refused_without_panicking() {
        let secret = Secret::parse(SECRET).unwrap();
        let none = Headers { id: None, timestamp: None, signature: None };
        assert_eq!(
            verify(std::slice::from_ref(&secret), &none, BODY, at(TIMESTAMP)),
            Err(SignatureError::MissingHeader)
        );
        assert_eq!(
            verify(std::slice::from_ref(&secret), &headers("soon", SIGNATURE), BODY, at(TIMESTAMP)),
            Err(SignatureError::BadTimestamp)
        );
        assert_eq!(
            verify(&[secret], &headers(&TIMESTAMP.to_string(), "v1,!!!"), BODY, at(TIMESTAMP)),
            Err(SignatureError::NoMatch)
        );
        assert!(Secret::parse("whsec_short").is_err() && Secret::parse_list("").is_err());
    }
}
