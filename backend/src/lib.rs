//! Server-side only: state, sign-in, services (rules + one transaction each) and the data layer.
// A lock guard held as a temporary to the end of a `match` or `if let` holds the lock through every arm. (The lint
// does not see through `.await`: a database connection taken so is caught by the architecture test, issue 61.)
#![warn(clippy::significant_drop_in_scrutinee)]
pub mod audit_key;
pub mod audit_witness;
pub mod auth;
pub mod charts;
pub mod clock;
pub mod config;
pub mod db;
pub mod demo;
pub mod kept;
pub mod mail;
pub mod metrics;
pub mod oidc;
pub mod options;
pub mod passwords;
pub mod reconciliation;
pub mod services;
pub mod slack;
pub mod state;
pub mod teams;
pub mod timestamps;
pub mod turns;
pub mod xlsx;

pub use clock::{Clock, ManualClock, SystemClock};
pub use db::Db;
pub use db::pools::PoolSettings;
pub use options::ServerOptions;
pub use state::AppState;
