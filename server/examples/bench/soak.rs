//! Pages never break under load, at full length and size (issues 22 and 61): the soak test of the integration
//! suite (every page as each role; `server/tests/it/soak.rs`) against the release binary, in a process of its own,
//! at 32 clients (the baseline), at 128, on the audit page alone at 64, at 128 with API clients sending step events
//! (measured alone first) and approvals dispatched meanwhile, and far beyond capacity at 1,000. Each run fails on
//! any body that stops before its end, any answer other than 200 (or, beyond capacity, 503 with `Retry-After`), and
//! any pool timeout or panic in the server's log.
use std::process::Command;

/// One run of the soak test: its variables, and what it printed ("soak: …"), or why it failed.
fn run(env: &[(&str, String)]) -> Result<String, String> {
    let ran = Command::new("cargo")
        .args(["test", "-p", "server", "--features", "ssr", "--test", "it", "--", "--exact", "--nocapture"])
        .arg("soak::thirty_two_clients_loading_every_page_as_each_role_get_only_whole_pages")
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
        .env(
            "RERUN_GATE_TEST_SERVER_BIN",
            std::path::absolute("target/release/server").unwrap_or_else(|_| "target/release/server".into()),
        )
        .env("RERUN_GATE_TEST_ENGINE", engine())
        .env("RUSTFLAGS", "--cfg erase_components")
        .output()
        .map_err(|e| format!("cargo test failed to start: {e}"))?;
    let said = String::from_utf8_lossy(&output_text(&ran)).into_owned();
    match (ran.status.success(), said.lines().find_map(|l| l.strip_prefix("soak: "))) {
        (true, Some(summary)) => Ok(summary.to_string()),
        _ => {
            let failure = said.lines().filter(|l| l.contains("failed") || l.contains("panicked") || l.contains("as "));
            Err(failure.take(5).collect::<Vec<_>>().join("; ").replace('|', "/"))
        }
    }
}

/// SQLite, or PostgreSQL when the bench runs beside one (`scripts/with-postgres.sh`).
fn engine() -> &'static str {
    if std::env::var_os("RERUN_GATE_TEST_PG_URL").is_some() { "postgres" } else { "sqlite" }
}

fn output_text(output: &std::process::Output) -> Vec<u8> {
    [output.stderr.as_slice(), output.stdout.as_slice()].concat()
}

/// A number that follows `after` in a summary ("41259 whole pages", "p99 12 ms").
fn figure(summary: &str, after: &str) -> f64 {
    summary
        .split(after)
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.trim_end_matches(['/', 's', ';', ',']).parse().ok())
        .unwrap_or(f64::NAN)
}

fn pages_per_second(summary: &str, seconds: u64) -> f64 {
    summary.split_whitespace().next().and_then(|n| n.parse::<f64>().ok()).unwrap_or(f64::NAN) / seconds as f64
}

fn vars(seconds: u64, clients: usize) -> Vec<(&'static str, String)> {
    vec![("RERUN_GATE_SOAK_SECONDS", seconds.to_string()), ("RERUN_GATE_SOAK_CLIENTS", clients.to_string())]
}

pub fn rows() -> String {
    let base = run(&vars(60, 32));
    let base_rate = base.as_deref().map_or(f64::NAN, |s| pages_per_second(s, 60));
    let what = format!("soak ({}): every page as each role, 32 clients, 60 s, release binary, demo data", engine());
    let mut rows =
        row(&what, &base, || (format!("{base_rate:.0} pages/s"), "—".into(), "—".into(), "0 failures".into()));
    let wide = run(&vars(60, 128));
    rows += &row("soak: every page as each role, 128 clients, 60 s (pools 6 + 8 + 2 connections)", &wide, || {
        let s = wide.as_deref().unwrap_or_default();
        let rate = pages_per_second(s, 60);
        let ratio = format!("{:.2}; p99 {} ms", rate / base_rate, figure(s, "p99 "));
        (
            format!("{rate:.0} pages/s"),
            format!("32 clients {base_rate:.0} pages/s"),
            ratio,
            "≥ 0.80, p99 ≤ 1,000 ms, 0 failures".into(),
        )
    });
    let audit = run(&[vars(30, 64), vec![("RERUN_GATE_SOAK_PAGES", "audit".into())]].concat());
    rows += &row("soak: the audit page alone, 64 clients, 30 s", &audit, || {
        let rate = audit.as_deref().map_or(f64::NAN, |s| pages_per_second(s, 30));
        (format!("{rate:.0} pages/s"), "—".into(), "—".into(), "0 failures".into())
    });
    let alongside = vec![("RERUN_GATE_SOAK_EVENTS", "8".into()), ("RERUN_GATE_SOAK_APPROVALS", "60".into())];
    let events = run(&[vars(30, 128), alongside].concat());
    rows += &row("step events through the API (8 clients) while 128 clients browse, 30 s", &events, || {
        let s = events.as_deref().unwrap_or_default();
        let (alone, browsing) = (figure(s, "events alone "), figure(s, "while browsing "));
        (
            format!("{browsing:.0} events/s"),
            format!("alone {alone:.0} events/s"),
            format!("{:.2}", browsing / alone),
            "≥ 0.50".into(),
        )
    });
    rows += &row(
        "approval → dispatch while 128 clients browse (60 approvals over 30 s, over HTTP): p99",
        &events,
        || {
            let s = events.as_deref().unwrap_or_default();
            let p99 = figure(s.split("approvals dispatched").nth(1).unwrap_or_default(), "p99 ");
            (format!("{p99} ms"), "—".into(), "—".into(), "p99 ≤ 2,000 ms".into())
        },
    );
    let beyond = run(&[vars(20, 1_000), vec![("RERUN_GATE_SOAK_BEYOND", "1".into())]].concat());
    // The 1,000 clients share the machine's two cores with the server: their own clocks measure their scheduling
    // as much as the server. A probe in a process of its own times the server's answers.
    rows += &row("far beyond capacity: 1,000 clients, 20 s, every page; 503s timed by a probe", &beyond, || {
        let s = beyond.as_deref().unwrap_or_default();
        let probe = s.split("a probe in its own process").nth(1).unwrap_or_default();
        let clients = s.split("Retry-After").nth(1).unwrap_or_default();
        (
            format!("shed p99 {} ms", figure(probe, "p99 ")),
            "—".into(),
            format!("the clients' own clocks: p99 {} ms", figure(clients, "p99 ")),
            "shed within 100 ms, 0 failures".into(),
        )
    });
    rows
}

/// A row of the table: the figures a run gave, or that it failed.
fn row(what: &str, ran: &Result<String, String>, figures: impl FnOnce() -> (String, String, String, String)) -> String {
    match ran {
        Ok(summary) => {
            let (value, baseline, ratio, target) = figures();
            format!("| {what} | {value} ({summary}) | {baseline} | {ratio} | {target} |\n")
        }
        Err(failure) => format!("| {what} | FAILED: {failure} | — | — | 0 failures |\n"),
    }
}
