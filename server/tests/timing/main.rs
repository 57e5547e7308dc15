//! Timings that must not tell secrets or cost more than they should, in a test binary of its own: the
//! integration suite runs some 290 tests at once on two cores, and a time measured beside them is theirs as much
//! as the code's (a CI run measured an unknown name's median more than a third away from a wrong password's while
//! the flood and guess tests hashed beside it). Cargo runs test binaries one after another, and the tests here
//! take turns (`alone`), so each measures only itself.
#![allow(dead_code)]
#[path = "../it/contract.rs"]
mod contract;
#[path = "../it/fixtures.rs"]
mod fixtures;
#[path = "../it/harness.rs"]
mod harness;
mod sign_in;
mod webhooks;

/// Held for the whole of a timing test: the tests of this binary run one at a time.
async fn alone() -> tokio::sync::MutexGuard<'static, ()> {
    static TURN: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
    TURN.lock().await
}

/// The median of one case's times.
fn median(mut times: Vec<f64>) -> f64 {
    times.sort_by(f64::total_cmp);
    times[times.len() / 2]
}
