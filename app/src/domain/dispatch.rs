//! Dispatching an approved rerun: what an answer means, and when to try again. Exponential backoff with
//! jitter, `Retry-After` honoured, only 2xx is success, a redirect is not followed, 410 means the endpoint is
//! gone, and a timeout is an unknown outcome — never a blind resend under a new key.
use chrono::Duration;
use super::names::named;

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
}
