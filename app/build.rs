//! Compiles app/locales/{ja,en}/<namespace>.json into the `i18n` module (leptos_i18n): `t!(i18n, board.title)`.
//! Japanese is the default locale; a key missing from English is a build warning here and a failing unit test
//! (`ui::locale_files`).
use leptos_i18n_build::{Config, ParseOptions, TranslationsInfos};
use std::path::PathBuf;

/// One namespace per part of the UI, so that each page's words live in one small file per language.
const NAMESPACES: [&str; 8] = ["common", "board", "operation", "rerun", "audit", "admin", "review", "incident"];

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    // The migrations are embedded by sqlx::migrate!: a new one must rebuild the crate (sqlx's advice).
    println!("cargo::rerun-if-changed=../migrations");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("OUT_DIR")).join("i18n");
    let config = Config::new("ja")
        .and_then(|c| c.add_locale("en"))
        .and_then(|c| c.add_namespaces(NAMESPACES))
        .expect("locales")
        .parse_options(ParseOptions::new().interpolate_display(true));
    let translations = TranslationsInfos::parse(config).expect("app/locales parse");
    translations.emit_diagnostics();
    translations.rerun_if_locales_changed();
    translations.generate_i18n_module(out).expect("i18n module generated");
}
