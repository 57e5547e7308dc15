//! The first pages on a slow phone: Playwright drives Chromium with its network and CPU emulation (1.6 Mbit/s
//! down, 150 ms round trip, CPU four times slower) against the release server (`end2end/run.sh` with
//! `end2end/bench.config.ts`): navigation to hydrated and the bytes transferred, and on until the network is quiet
//! (the code of other pages a first page fetches), median of five cold loads each.
use serde_json::Value;

pub fn rows() -> String {
    let results = std::path::Path::new("target/bench/slow-phone.json");
    let _ = std::fs::remove_file(results);
    let ran = std::process::Command::new("end2end/run.sh")
        .arg("--config=bench.config.ts")
        .env("SERVER_BIN", "target/release/server")
        .env("SLOW_PHONE_RESULTS", std::path::absolute(results).unwrap_or_else(|_| results.into()))
        .status();
    let measured: Option<Value> =
        std::fs::read_to_string(results).ok().and_then(|text| serde_json::from_str(&text).ok());
    let (Ok(status), Some(Value::Object(pages))) = (ran, measured) else {
        return "| slow phone: first pages | not measured (end2end/run.sh failed) | — | — | ≤ 2,000 ms |\n".into();
    };
    if !status.success() {
        return format!("| slow phone: first pages | not measured (end2end/run.sh: {status}) | — | — | ≤ 2,000 ms |\n");
    }
    pages
        .iter()
        .map(|(name, figures)| {
            let figure = |key: &str| figures[key].as_f64().unwrap_or(f64::NAN);
            let (ms, kib) = (figure("median_ms"), figure("median_bytes") / 1024.0);
            let seen_ms = figure("median_seen_ms");
            let (quiet_ms, quiet_kib) = (figure("median_quiet_ms"), figure("median_quiet_bytes") / 1024.0);
            let (document_ms, code_ms) = (figure("median_document_ms"), figure("median_code_ms"));
            let code_kib = figure("median_code_bytes") / 1024.0;
            format!(
                "| slow phone (1.6 Mbit/s, 150 ms, CPU 4×): {name}, navigation → hydrated (the page's clock), \
                 median of 5 cold loads | {ms:.0} ms (the test's polling saw it at {seen_ms:.0} ms) \
                 | {kib:.0} KiB transferred | — | ≤ 2,000 ms |\n\
                 | slow phone: {name}, where the time goes (medians) | the document's last byte at \
                 {document_ms:.0} ms, the code's ({code_kib:.0} KiB: wasm and JavaScript) at {code_ms:.0} ms, then \
                 compiling and hydrating | — | — | — |\n\
                 | slow phone: {name}, navigation → network quiet (what it fetches after it is interactive) \
                 | {quiet_ms:.0} ms | {quiet_kib:.0} KiB transferred | — | — |\n"
            )
        })
        .collect()
}
