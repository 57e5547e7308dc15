//! Rerun Gate: the Leptos crate, in floors that only depend downwards: `domain` (the rules), `contract` (what
//! crosses the wire), `backend` (server only: data layer, then services), `api` (the server functions), `ui`
//! (the pages).
#![recursion_limit = "256"]

// The `i18n` module: `Locale`, `use_i18n`, `t!` (generated from app/locales by build.rs).
include!(concat!(env!("OUT_DIR"), "/i18n/mod.rs"));

pub mod api;
#[cfg(feature = "ssr")]
pub mod backend;
/// The rules and the wire live in crates of their own (`domain/`, `contract/`); `crate::domain` and
/// `crate::contract` name them here.
pub use {contract, domain};
pub mod ui;
pub mod words;

pub use ui::{App, shell};

/// The browser entry point: takes over the server-rendered page.
#[cfg(feature = "hydrate")]
#[wasm_bindgen::prelude::wasm_bindgen]
pub fn hydrate() {
    // Only where a panic can reach a hook: the release bundle aborts at once (`make release`,
    // -Cpanic=immediate-abort), and the hook's formatting machinery would only weigh down its first download.
    #[cfg(debug_assertions)]
    console_error_panic_hook::set_once();
    leptos::mount::hydrate_lazy(App);
}
