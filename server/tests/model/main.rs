//! The gate's stateful property test, in a test binary of its own: it starts hundreds of apps one after another,
//! so it runs after the integration suite (`tests/it`) rather than beside it, and the suite's timings (page
//! renders under a 20 s limit) are not shared with it. The same harness as the suite's, of which it uses a part.
#![allow(dead_code)]
#[path = "../it/contract.rs"]
mod contract;
#[path = "../it/fixtures.rs"]
mod fixtures;
mod gate_model;
#[path = "../it/harness.rs"]
mod harness;
mod own_writes;
