//! Pages never break under load, at full length: the soak test of the integration suite (every page as each
//! role, 32 clients; `server/tests/it/soak.rs`) for 60 s against the release binary, in a process of its own.
//! It fails on any body that stops before its end, any answer other than 200, and any pool timeout or panic in
//! the server's log.
use std::process::Command;

const SECONDS: u64 = 60;

pub fn row() -> String {
    let ran = Command::new("cargo")
        .args(["test", "-p", "server", "--features", "ssr", "--test", "it", "--", "--exact", "--nocapture"])
        .arg("soak::thirty_two_clients_loading_every_page_as_each_role_get_only_whole_pages")
        .env("RERUN_GATE_SOAK_SECONDS", SECONDS.to_string())
        .env(
            "RERUN_GATE_TEST_SERVER_BIN",
            std::path::absolute("target/release/server").unwrap_or_else(|_| "target/release/server".into()),
        )
        .env("RERUN_GATE_TEST_ENGINE", "sqlite")
        .env("RUSTFLAGS", "--cfg erase_components")
        .output();
    let Ok(output) = ran else {
        return "| soak: every page as each role, 32 clients | not run (cargo test failed to start) | — | — \
                | 0 failures |\n"
            .into();
    };
    let said = String::from_utf8_lossy(&output.stderr).into_owned() + &String::from_utf8_lossy(&output.stdout);
    // The test's own summary: "soak: N whole pages in S s from C clients".
    let summary = said.lines().find_map(|l| l.strip_prefix("soak: ")).unwrap_or("no summary").to_string();
    if output.status.success() {
        let pages: f64 = summary.split_whitespace().next().and_then(|n| n.parse().ok()).unwrap_or(f64::NAN);
        format!(
            "| soak: every page as each role, 32 clients, {SECONDS} s, release binary, demo data \
             | {summary} ({:.0}/s); 0 stopped bodies, 0 answers other than 200, no pool timeout or panic in the log \
             | — | — | 0 failures |\n",
            pages / SECONDS as f64
        )
    } else {
        let failure = said
            .lines()
            .filter(|l| l.contains("failed") || l.contains("panicked") || l.contains("as "))
            .take(5)
            .collect::<Vec<_>>()
            .join("; ");
        format!(
            "| soak: every page as each role, 32 clients, {SECONDS} s, release binary | FAILED: {} | — | — \
             | 0 failures |\n",
            failure.replace('|', "/")
        )
    }
}
