//! The conformance check of an integration's rerun endpoint (`server integration check`): test calls that change
//! nothing (`rerun.test`), each with what a safe receiver does with it. A receiver that accepts an unsigned call
//! can be made to rerun by anyone; one that acts on a repeat of the same `webhook-id` sends the second invoice.
use super::names::named;
use serde::{Deserialize, Serialize};

named! {
    /// What a receiver built with the client kits says it did with a rerun call (`{"outcome": …}`).
    #[cfg_attr(feature = "ssr", derive(utoipa::ToSchema), schema(rename_all = "snake_case"))]
    pub enum RerunOutcome {
        /// The listed steps were handed to the integration (2xx).
        Done => "done",
        /// This `webhook-id` was received before: nothing done again (2xx).
        Duplicate => "duplicate",
        /// A verified `rerun.test`: nothing done (2xx).
        Test => "test",
        /// Unsigned, wrongly signed or stale (401), or not a rerun call (422).
        Refused => "refused",
        /// The handler failed: the claim is released and a retry runs it (500).
        Failed => "failed",
        /// This `webhook-id` is still being handled by an earlier delivery: try again after `Retry-After` (503).
        InProgress => "in_progress",
    }
}

/// One test call, in the order they are sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Probe {
    /// No signature headers at all.
    Unsigned,
    /// Signed with a secret that is not the workflow's.
    WronglySigned,
    /// Signed correctly, with a timestamp ten minutes old (the tolerance is five).
    Stale,
    /// Signed correctly, now.
    Delivered,
    /// The same `webhook-id` again, signed again, as the dispatcher retries.
    Repeated,
}

impl Probe {
    pub const ALL: [Probe; 5] =
        [Probe::Unsigned, Probe::WronglySigned, Probe::Stale, Probe::Delivered, Probe::Repeated];

    /// Seconds the stale call's timestamp lies in the past.
    pub const STALE_SECONDS: i64 = 600;
}

/// What came back for one test call.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Heard {
    /// An HTTP status, and the `outcome` a kit's receiver says in its answer, if any.
    Answer { status: u16, outcome: Option<RerunOutcome> },
    /// No connection (the address, the port, the SSRF guard): why.
    NotSent { why: String },
    /// No answer within the send timeout, or the connection broke: why.
    NoAnswer { why: String },
}

impl Heard {
    /// An answer's status and its `{"outcome": …}`, read leniently: other receivers may answer anything.
    pub fn answer(status: u16, body: &str) -> Heard {
        let answer = serde_json::from_str::<serde_json::Value>(body).ok();
        let outcome = answer.as_ref().and_then(|v| RerunOutcome::parse(v.get("outcome")?.as_str()?));
        Heard::Answer { status, outcome }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProbeResult {
    pub probe: Probe,
    pub heard: Heard,
    pub met: bool,
}

/// Whether a safe receiver would have answered `heard` to `probe`.
pub fn judge(probe: Probe, heard: Heard) -> ProbeResult {
    let met = match (&heard, probe) {
        (Heard::Answer { status, .. }, Probe::Unsigned | Probe::WronglySigned | Probe::Stale) => {
            matches!(status, 401 | 403)
        }
        // Only the documented answer shows that the test call ran nothing: a plain 2xx may have run every step.
        (Heard::Answer { status, outcome }, Probe::Delivered) => {
            (200..300).contains(status) && *outcome == Some(RerunOutcome::Test)
        }
        // A repeat must be answered 2xx (so that retries stop) and said to be one: nothing shows otherwise that
        // it was not acted on again.
        (Heard::Answer { status, outcome }, Probe::Repeated) => {
            (200..300).contains(status) && *outcome == Some(RerunOutcome::Duplicate)
        }
        (Heard::NotSent { .. } | Heard::NoAnswer { .. }, _) => false,
    };
    ProbeResult { probe, heard, met }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(status: u16, outcome: Option<RerunOutcome>) -> Heard {
        Heard::Answer { status, outcome }
    }

    #[test]
    fn a_call_that_is_not_properly_signed_must_be_refused_with_401_or_403() {
        for probe in [Probe::Unsigned, Probe::WronglySigned, Probe::Stale] {
            assert!(judge(probe, answer(401, Some(RerunOutcome::Refused))).met);
            assert!(judge(probe, answer(403, None)).met);
            assert!(!judge(probe, answer(200, Some(RerunOutcome::Test))).met, "{probe:?} accepted");
            assert!(!judge(probe, answer(500, None)).met, "{probe:?}: a crash is not a refusal");
        }
    }

    #[test]
    fn the_valid_call_is_answered_2xx_once_and_its_repeat_is_said_to_be_a_duplicate() {
        assert!(judge(Probe::Delivered, answer(200, Some(RerunOutcome::Test))).met);
        assert!(!judge(Probe::Delivered, answer(204, None)).met, "a plain 2xx may have run every step");
        assert!(!judge(Probe::Delivered, answer(200, None)).met);
        assert!(!judge(Probe::Delivered, answer(200, Some(RerunOutcome::Done))).met, "a test run as a rerun");
        assert!(judge(Probe::Repeated, answer(200, Some(RerunOutcome::Duplicate))).met);
        assert!(!judge(Probe::Repeated, answer(200, Some(RerunOutcome::Test))).met, "acted on twice");
        assert!(!judge(Probe::Repeated, answer(200, None)).met, "nothing says it was not acted on again");
        assert!(!judge(Probe::Repeated, answer(409, None)).met, "a refusal ends the dispatch as failed");
    }

    #[test]
    fn no_connection_or_no_answer_meets_nothing() {
        assert!(!judge(Probe::Unsigned, Heard::NotSent { why: "refused".into() }).met);
        assert!(!judge(Probe::Delivered, Heard::NoAnswer { why: "timeout".into() }).met);
    }

    #[test]
    fn an_answer_is_read_leniently() {
        assert_eq!(Heard::answer(200, r#"{"outcome":"duplicate"}"#), answer(200, Some(RerunOutcome::Duplicate)));
        assert_eq!(Heard::answer(200, "ok"), answer(200, None));
        assert_eq!(Heard::answer(200, r#"{"outcome":"maybe"}"#), answer(200, None));
    }
}
