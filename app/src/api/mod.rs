//! Server functions: each short, actor -> service -> view. The views and the error type are the contract's
//! (`crate::contract`), named there by the pages and the process too.
pub mod admin;
pub mod audit;
pub mod auth;
pub mod batches;
pub mod board;
#[cfg(feature = "ssr")]
pub(crate) mod context;
pub mod drills;
pub mod incidents;
pub mod names;
pub mod notifications;
pub mod policy;
pub mod reruns;
pub mod reviews;
pub mod stop_switch;
#[cfg(feature = "ssr")]
pub use context::{ReadOnce, locale_of, preference_cookies};
