//! A CSV file as people open it: Excel (Japanese Windows above all) reads CSV as UTF-8 only when it starts with
//! a byte-order mark, so every CSV download starts with one; tools that do not want it ask with `bom=false`.
use axum::http::header;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;

pub const BOM: &[u8] = b"\xEF\xBB\xBF";

/// `?bom=false`: the file without the byte-order mark.
#[derive(Clone, Copy, Deserialize)]
pub struct CsvOptions {
    #[serde(default = "with_bom")]
    pub bom: bool,
}

fn with_bom() -> bool {
    true
}

impl CsvOptions {
    /// What goes before the file's first byte.
    pub fn start(self) -> &'static [u8] {
        if self.bom { BOM } else { b"" }
    }
}

/// A CSV download named `file_name`.
pub fn download(options: CsvOptions, file_name: &str, bytes: Vec<u8>) -> Response {
    let disposition = format!("attachment; filename=\"{file_name}\"");
    let body = [options.start(), &bytes].concat();
    ([(header::CONTENT_TYPE, "text/csv; charset=utf-8".to_string()), (header::CONTENT_DISPOSITION, disposition)], body)
        .into_response()
}
