//! Compiles words/locales/{ja,en}/<namespace>.json into the `i18n` module (leptos_i18n): `t!(i18n, board.title)`.
//! Japanese is the default locale; a key missing from English is a build warning here and a failing unit test
//! (`locale_files`, a unit test here).
//!
//! It calls leptos_i18n's parser and code generator directly (the two crates `leptos_i18n_build` wraps, which the
//! `t!` macro already brings): `leptos_i18n_build` also brings ICU's data generator (a WebAssembly interpreter,
//! ICU's sources), some 300 crates this app never runs, built once per target on a newcomer's first build.
use leptos_i18n_parser::parse_locales::options::{Config, ParseOptions};
use leptos_i18n_parser::parse_locales::parse_locales;
use std::path::PathBuf;

/// One namespace per part of the UI, so that each page's words live in one small file per language.
const NAMESPACES: [&str; 8] = ["common", "board", "operation", "rerun", "audit", "admin", "review", "incident"];

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("OUT_DIR")).join("i18n");
    let config = Config::new("ja")
        .and_then(|c| c.add_locale("en"))
        .and_then(|c| c.add_namespaces(NAMESPACES))
        .expect("locales")
        .parse_options(ParseOptions::new().interpolate_display(true));
    let parsed = parse_locales(None, config).expect("words/locales parse");
    for warning in parsed.diag.warnings().iter() {
        println!("cargo::warning={warning}");
    }
    for error in parsed.diag.errors().iter() {
        println!("cargo::error={error}");
    }
    for path in parsed.tracked_files.iter().flatten() {
        println!("cargo::rerun-if-changed={path}");
    }
    // As leptos_i18n_build generates it: the crate found by name, diagnostics printed above, documented keys.
    let module = leptos_i18n_codegen::gen_code(&parsed, None, false, None, true).expect("i18n module generated");
    std::fs::create_dir_all(&out).expect("i18n module folder");
    std::fs::write(out.join("mod.rs"), module.to_string()).expect("i18n module written");
}
