//! RFC 3161 time stamps for the audit chain's signed checkpoints (`[audit] timestamp_url`): the SHA-256 of a
//! checkpoint's signed text goes to a time-stamping authority, whose answer (a TimeStampResp, DER) is kept with
//! the checkpoint and exported. It shows that the checkpoint existed at the authority's time, which neither the
//! key's holder nor the database's operator can set; `openssl ts -verify` checks it (docs/security.md, the
//! audit trail).
use crate::reconciliation::ssrf;
use cms::signed_data::SignedData;
use der::asn1::{Int, OctetString};
use der::oid::db::rfc5912::ID_SHA_256;
use der::{Decode, Encode};
use sha2::{Digest, Sha256};
use x509_tsp::{MessageImprint, TimeStampReq, TimeStampResp, TspVersion, TstInfo};

/// An answer larger than this is not a time stamp.
const MAX_ANSWER: usize = 64 * 1024;

/// Asks the authority at `url` to stamp `text`; returns its answer once it is granted and stamps exactly this
/// text's hash with this request's nonce.
pub async fn stamp(url: &str, allow_loopback: bool, text: &str) -> Result<Vec<u8>, String> {
    let digest = Sha256::digest(text.as_bytes()).to_vec();
    // A positive integer in its shortest form: a first byte from 1 to 127.
    let mut nonce: [u8; 8] = rand::random();
    nonce[0] = nonce[0] % 127 + 1;
    let request = TimeStampReq {
        version: TspVersion::V1,
        message_imprint: MessageImprint {
            hash_algorithm: cms::cert::x509::spki::AlgorithmIdentifier { oid: ID_SHA_256, parameters: None },
            hashed_message: OctetString::new(digest.clone()).map_err(|e| e.to_string())?,
        },
        req_policy: None,
        nonce: Some(Int::new(&nonce).map_err(|e| e.to_string())?),
        cert_req: true,
        extensions: None,
    };
    let body = request.to_der().map_err(|e| e.to_string())?;
    let parsed = url::Url::parse(url).map_err(|e| e.to_string())?;
    ssrf::check_url(&parsed, allow_loopback)?;
    let answer = ssrf::shared_client(allow_loopback)?
        .post(parsed)
        .header(reqwest::header::CONTENT_TYPE, "application/timestamp-query")
        .body(body)
        .timeout(std::time::Duration::from_secs(10))
        .send()
        .await
        .map_err(|e| format!("the time-stamping authority did not answer: {e}"))?;
    if !answer.status().is_success() {
        return Err(format!("the time-stamping authority answered HTTP {}", answer.status().as_u16()));
    }
    let bytes = answer.bytes().await.map_err(|e| e.to_string())?;
    if bytes.len() > MAX_ANSWER {
        return Err(format!("the time-stamping authority's answer is too large ({} bytes)", bytes.len()));
    }
    check(&bytes, &digest, &nonce)?;
    Ok(bytes.to_vec())
}

/// The answer is granted, and its token stamps `digest` with `nonce` (an answer to another request is refused).
fn check(answer: &[u8], digest: &[u8], nonce: &[u8]) -> Result<(), String> {
    use cmpv2::status::PkiStatus;
    let response = TimeStampResp::from_der(answer).map_err(|e| format!("not a time-stamp response: {e}"))?;
    if !matches!(response.status.status, PkiStatus::Accepted | PkiStatus::GrantedWithMods) {
        return Err(format!("the time-stamping authority refused: {:?}", response.status.status));
    }
    let token = response.time_stamp_token.ok_or("a granted answer without a token")?;
    let signed =
        SignedData::from_der(&token.content.to_der().map_err(|e| e.to_string())?).map_err(|e| e.to_string())?;
    let content = signed.encap_content_info.econtent.ok_or("a token without content")?;
    let info = TstInfo::from_der(content.value()).map_err(|e| format!("the token's content: {e}"))?;
    if info.message_imprint.hashed_message.as_bytes() != digest {
        return Err("the token stamps another text".into());
    }
    if info.nonce.as_ref().map(Int::as_bytes) != Some(nonce) {
        return Err("the token answers another request (its nonce differs)".into());
    }
    Ok(())
}
