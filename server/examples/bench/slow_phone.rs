//! The first pages on a slow phone: Playwright drives Chromium with its network and CPU emulation (1.6 Mbit/s
//! down, 150 ms round trip, CPU four times slower) against the release server (`end2end/run.sh` with
//! `end2end/bench.config.ts`): navigation to hydrated and the bytes transferred, median of five cold loads each.
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
        return "| slow phone: first pages | not measured (end2end/run.sh failed) | — | — | ≤ 3,000 ms |\n".into();
    };
    if !status.success() {
        return format!("| slow phone: first pages | not measured (end2end/run.sh: {status}) | — | — | ≤ 3,000 ms |\n");
    }
    pages
        .iter()
        .map(|(name, figures)| {
            let ms = figures["median_ms"].as_f64().unwrap_or(f64::NAN);
            let kib = figures["median_bytes"].as_f64().unwrap_or(f64::NAN) / 1024.0;
            format!(
                "| slow phone (1.6 Mbit/s, 150 ms, CPU 4×): {name}, navigation → hydrated, median of 5 cold loads | {ms:.0} ms | {kib:.0} KiB transferred | — | ≤ 3,000 ms |\n"
            )
        })
        .collect()
}
