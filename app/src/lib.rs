//! Rerun Gate: the Leptos crate, in floors that only depend downwards: `domain` (the rules), `contract` (what
//! crosses the wire), `backend` (server only: data layer, then services), `api` (the server functions), `ui`
//! (the pages).
#![recursion_limit = "256"]

pub mod api;
/// The layers below live in crates of their own (`domain/`, `contract/`, `words/`, and on the server `backend/`);
/// these names reach them from here, `crate::i18n` the translations (`Locale`, `use_i18n`, `t!`).
#[cfg(feature = "ssr")]
pub use backend;
pub use {contract, domain, words, words::i18n};
pub mod ui;

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
