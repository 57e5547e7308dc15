//! The stories: each case the demo loads from the seed, played as its people would from the stalled board to the
//! end — start, checklist, submit, the approvals the workflow needs (other people), the rerun sent with the
//! original keys, the integration's report, the operation completed — then the auditor's export verified and the
//! operation's evidence ZIP proving the story's events. The people act through the server functions the pages
//! call, signed in with the demo's one-time passwords; the dispatcher's and the sweeper's rounds are the tests'
//! (their clock is the tests'). On SQLite unless `RERUN_GATE_TEST_ENGINE=postgres`, as the integration suite;
//! `make stories` runs this binary alone, and each story prints how long it took.
#![allow(dead_code)]
#[path = "../it/contract.rs"]
mod contract;
mod demo;
#[path = "../it/fixtures.rs"]
mod fixtures;
#[path = "../it/harness.rs"]
mod harness;
mod seed;
mod walkthrough;
