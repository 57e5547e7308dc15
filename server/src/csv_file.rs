//! A CSV file as people open it: Excel (Japanese Windows above all) reads CSV as UTF-8 only when it starts with
//! a byte-order mark, so every CSV download starts with one, and its heading row is in the reader's language.
//! Tools ask for neither: `bom=false` leaves the mark out, `columns=codes` heads the columns with their stable
//! codes (`seq`, `at`, …: docs/security.md).
use axum::http::header;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use words::i18n::Locale;

pub const BOM: &[u8] = b"\xEF\xBB\xBF";

/// `?bom=false`: the file without the byte-order mark; `?columns=codes`: the columns headed by their codes.
#[derive(Clone, Copy, Deserialize)]
pub struct CsvOptions {
    #[serde(default = "with_bom")]
    pub bom: bool,
    #[serde(default)]
    pub columns: Columns,
}

/// How the heading row names the columns.
#[derive(Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Columns {
    /// In the reader's language (people, spreadsheets).
    #[default]
    Words,
    /// By their codes (tools).
    Codes,
}

fn with_bom() -> bool {
    true
}

impl CsvOptions {
    /// What goes before the file's first byte.
    pub fn start(self) -> &'static [u8] {
        if self.bom { BOM } else { b"" }
    }

    /// The heading row's language for a reader of `locale` (`None`: the codes).
    pub fn headings(self, locale: Locale) -> Option<Locale> {
        (self.columns == Columns::Words).then_some(locale)
    }
}

/// A CSV download named `file_name`.
pub fn download(options: CsvOptions, file_name: &str, bytes: Vec<u8>) -> Response {
    let disposition = format!("attachment; filename=\"{file_name}\"");
    let body = [options.start(), &bytes].concat();
    ([(header::CONTENT_TYPE, "text/csv; charset=utf-8".to_string()), (header::CONTENT_DISPOSITION, disposition)], body)
        .into_response()
}
