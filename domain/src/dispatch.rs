//! Dispatching an approved rerun: what an answer means, and when to try again. Exponential backoff with
//! jitter, `Retry-After` honoured, only 2xx is success, a redirect is not followed, 410 means the endpoint is
//! gone, and a timeout is an unknown outcome — never a blind resend under a new key.
use super::names::named;
use chrono::Duration;

pub const MAX_ATTEMPTS: i64 = 8;
const BASE_SECONDS: i64 = 2;
const MAX_DELAY_SECONDS: i64 = 300;

named! {
    /// Where an approved rerun's outbox row stands.
    pub enum DispatchStatus {
        /// Waiting for its turn or for another attempt.
        Pending => "pending",
        /// The receiver answered 2xx (or nothing was left to send).
        Sent => "sent",
        /// Not sent, and it will not be: refused, gone, out of attempts, expired, voided or withdrawn.
        Failed => "failed",
        /// Sent without an answer: reconciliation settles it.
        Unknown => "unknown",
    }
}

named! {
    /// Where an outgoing e-mail or chat message stands in its outbox.
    pub enum DeliveryStatus {
        Pending => "pending",
        Sent => "sent",
        /// Refused for good, or out of attempts.
        Failed => "failed",
    }
}

/// What one attempt's answer means.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Answer {
    /// 2xx: the receiver has it.
    Accepted,
    /// 429 or 5xx, or the connection failed before anything was sent: try again later.
    TryAgain,
    /// 410: the endpoint is gone; stop.
    Gone,
    /// Any other answer (3xx, 4xx): the receiver refuses; trying again would not help.
    Refused,
    /// No answer within the time limit: the receiver may have acted. Reconciliation decides.
    Unknown,
}

pub fn answer_of(status: u16) -> Answer {
    match status {
        200..=299 => Answer::Accepted,
        410 => Answer::Gone,
        429 | 500..=599 => Answer::TryAgain,
        _ => Answer::Refused,
    }
}

/// The wait before attempt `attempts + 1` (after `attempts` failed ones), or `None` when they are used up.
/// `jitter` in [0, 1) spreads retries of many dispatches; `retry_after` (seconds) is honoured when longer.
pub fn next_delay(attempts: i64, retry_after: Option<i64>, jitter: f64) -> Option<Duration> {
    if attempts >= MAX_ATTEMPTS {
        return None;
    }
    let exponential = (BASE_SECONDS << attempts.clamp(0, 20)).min(MAX_DELAY_SECONDS);
    let jittered = (exponential as f64 * (0.5 + jitter.clamp(0.0, 1.0) / 2.0)).round() as i64;
    let wait = retry_after.map_or(jittered, |after| after.max(jittered)).min(3600);
    Some(Duration::seconds(wait.max(1)))
}

/// Time left for the batch's reads and writes around its slowest look-ups and send.
pub const LEASE_MARGIN_SECONDS: u64 = 5;

/// The work one dispatch lease covers, in seconds: the look-ups right before sending (one after another, each
/// cut off at its connector's timeout) and the POST (cut off at the send timeout).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeasedWork {
    /// The workflow whose look-ups take longest, and their timeouts added up.
    pub workflow: String,
    pub look_ups: u64,
    pub send: u64,
}

/// A lease that can end while its holder still works would let a second dispatcher take the rerun: refused,
/// naming what it must outlast.
pub fn lease_covers(lease_seconds: u64, work: &LeasedWork) -> Result<(), String> {
    let needed = work.look_ups + work.send + LEASE_MARGIN_SECONDS;
    if lease_seconds >= needed {
        return Ok(());
    }
    Err(format!(
        "RERUN_GATE_DISPATCH_LEASE_SECONDS is {lease_seconds} s, shorter than the work a lease covers: \
         the look-up timeouts of workflow '{}' ({} s) + the send timeout ({} s) + {LEASE_MARGIN_SECONDS} s \
         for the writes = {needed} s",
        work.workflow, work.look_ups, work.send
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_2xx_is_success_and_410_429_5xx_redirects_have_their_meaning() {
        assert_eq!(answer_of(204), Answer::Accepted);
        assert_eq!(answer_of(410), Answer::Gone);
        assert_eq!(answer_of(429), Answer::TryAgain);
        assert_eq!(answer_of(503), Answer::TryAgain);
        assert_eq!(answer_of(302), Answer::Refused);
        assert_eq!(answer_of(400), Answer::Refused);
    }

    #[test]
    fn the_wait_grows_exponentially_with_jitter_honours_retry_after_and_ends() {
        assert_eq!(next_delay(0, None, 1.0), Some(Duration::seconds(2)));
        assert_eq!(next_delay(3, None, 1.0), Some(Duration::seconds(16)));
        assert_eq!(next_delay(3, None, 0.0), Some(Duration::seconds(8)), "jitter halves at most");
        assert_eq!(next_delay(7, None, 1.0), Some(Duration::seconds(256)));
        assert_eq!(next_delay(1, Some(120), 0.5), Some(Duration::seconds(120)));
        assert_eq!(next_delay(MAX_ATTEMPTS, None, 0.5), None);
    }

    #[test]
    fn a_lease_must_outlast_the_look_ups_the_send_and_the_margin() {
        let work = LeasedWork { workflow: "order_intake".into(), look_ups: 20, send: 10 };
        assert!(lease_covers(35, &work).is_ok());
        let refused = lease_covers(34, &work).unwrap_err();
        for named in
            ["RERUN_GATE_DISPATCH_LEASE_SECONDS is 34 s", "order_intake", "(20 s)", "send timeout (10 s)", "= 35 s"]
        {
            assert!(refused.contains(named), "{named} missing from: {refused}");
        }
    }
}
