//! An `Idempotency-Key` of the JSON API: claimed while its request is being processed, then done with the
//! stored answer that a replay gets.
use super::names::named;

named! {
    pub enum IdempotencyState {
        InFlight => "in_flight",
        Done => "done",
    }
}
