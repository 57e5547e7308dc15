//! Rerun Gate: the Leptos crate. `domain` holds the rules, `api` the server functions, `ui` the pages,
//! `backend` (server only) the state, services and data layer.
#![recursion_limit = "256"]

// The `i18n` module: `Locale`, `use_i18n`, `t!` (generated from app/locales by build.rs).
include!(concat!(env!("OUT_DIR"), "/i18n/mod.rs"));

pub mod api;
#[cfg(feature = "ssr")]
pub mod backend;
pub mod domain;
pub mod ui;

pub use ui::{App, shell};

/// The browser entry point: takes over the server-rendered page.
#[cfg(feature = "hydrate")]
#[wasm_bindgen::prelude::wasm_bindgen]
pub fn hydrate() {
    console_error_panic_hook::set_once();
    leptos::mount::hydrate_lazy(App);
}
