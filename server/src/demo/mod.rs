//! The demo's HTTP side (`serve --demo` only); the demo itself is `backend::demo`.
mod systems;

pub use systems::routes;
