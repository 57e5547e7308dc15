//! An `Idempotency-Key` of the JSON API: claimed while its request is being processed, then done with the
//! stored answer that a replay gets.
use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IdempotencyState {
    InFlight,
    Done,
}

impl IdempotencyState {
    pub fn as_str(self) -> &'static str {
        match self {
            IdempotencyState::InFlight => "in_flight",
            IdempotencyState::Done => "done",
        }
    }

    pub fn parse(s: &str) -> Option<IdempotencyState> {
        [IdempotencyState::InFlight, IdempotencyState::Done].into_iter().find(|d| d.as_str() == s)
    }
}
