//! Audit export of 1,000,000 events: `server audit export --format csv` (the real command, a child process)
//! against `sqlite3 -csv` reading the same table in the same run; rows per second and peak RSS of each.
use backend::Db;
use chrono::Utc;
use domain::audit::{Actor, AuditEntry, AuditEvent};
use serde_json::json;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

pub struct Run {
    pub rows_per_second: f64,
    pub peak_rss_mib: f64,
}

/// Appends `count` chained events straight into the table (test data: many rows per statement).
pub async fn fill(db: &Db, count: usize) -> anyhow::Result<()> {
    anyhow::ensure!(db.engine() == "sqlite", "the export benchmark runs on SQLite");
    let (mut seq, mut hash) = {
        let mut tx = db.begin_read().await?;
        backend::db::audit::head(&mut tx).await?
    };
    const ROWS: usize = 500; // 15 values each, under SQLite's 32,766 parameters
    let columns = "seq, at, actor_kind, actor_id, actor_label, action, object_type, object_id, department, \
                   before_json, after_json, reason, request_id, prev_hash, hash";
    let mut written = 0;
    while written < count {
        let n = ROWS.min(count - written);
        let mut events: Vec<AuditEvent> = Vec::with_capacity(n);
        for i in 0..n {
            let k = written + i;
            let entry = AuditEntry::new(
                Actor::api_client(1, "bench-intake"),
                domain::audit_action::AuditAction::StepSucceeded,
                domain::audit::ObjectType::Operation,
                format!("BENCH-{}", k / 20),
            )
            .department(Some(if k % 3 == 0 { "billing" } else { "sales" }))
            .before(json!({"step": "register_order", "state": "started", "seq": 1}))
            .after(json!({"step": "register_order", "state": "succeeded", "seq": 2, "result_id": format!("ord_{k}")}));
            let prev = if seq == 0 { None } else { Some((seq, hash.as_str())) };
            let event = entry.seal(prev, Utc::now());
            (seq, hash) = (event.seq, event.hash.clone());
            events.push(event);
        }
        let values: Vec<String> = (0..n)
            .map(|r| format!("({})", (1..=15).map(|c| format!("${}", r * 15 + c)).collect::<Vec<_>>().join(",")))
            .collect();
        let sql = format!("INSERT INTO audit_events ({columns}) VALUES {}", values.join(","));
        let mut tx = db.begin_write().await?;
        if let backend::db::Conn::Sqlite(t, _) = &mut tx {
            let mut q = sqlx::query(&sql);
            for e in &events {
                q = q
                    .bind(e.seq)
                    .bind(e.at)
                    .bind(&e.actor_kind)
                    .bind(&e.actor_id)
                    .bind(&e.actor_label)
                    .bind(&e.action)
                    .bind(&e.object_type)
                    .bind(&e.object_id)
                    .bind(&e.department)
                    .bind(&e.before_json)
                    .bind(&e.after_json)
                    .bind(&e.reason)
                    .bind(&e.request_id)
                    .bind(&e.prev_hash)
                    .bind(&e.hash);
            }
            q.execute(&mut **t).await?;
        }
        tx.commit().await?;
        written += n;
    }
    Ok(())
}

/// Runs a command with stdout counted and thrown away; its wall time and peak resident memory (VmHWM).
fn measure(mut command: Command, rows: usize) -> anyhow::Result<Run> {
    let started = Instant::now();
    let mut child = command.stdout(Stdio::piped()).stderr(Stdio::null()).spawn()?;
    let mut out = child.stdout.take().expect("piped");
    let reader = std::thread::spawn(move || std::io::copy(&mut out, &mut std::io::sink()));
    let status_file = format!("/proc/{}/status", child.id());
    let mut peak_kib = 0u64;
    while child.try_wait()?.is_none() {
        if let Ok(status) = std::fs::read_to_string(&status_file) {
            let hwm = status
                .lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches(" kB").trim().parse().ok());
            peak_kib = peak_kib.max(hwm.unwrap_or(0));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let bytes = reader.join().map_err(|_| anyhow::anyhow!("reader"))??;
    let elapsed = started.elapsed().as_secs_f64();
    anyhow::ensure!(bytes > 0, "{command:?} wrote nothing");
    Ok(Run { rows_per_second: rows as f64 / elapsed, peak_rss_mib: peak_kib as f64 / 1024.0 })
}

/// Ours, then the baseline, on the same database file.
pub fn compare(database_path: &str, rows: usize) -> anyhow::Result<(Run, Run)> {
    let server =
        std::env::current_exe()?.parent().and_then(|examples| examples.parent()).map(|release| release.join("server"));
    let server = server
        .filter(|p| p.exists())
        .ok_or_else(|| anyhow::anyhow!("build the server binary first (make bench does)"))?;
    let mut ours = Command::new(server);
    ours.args(["audit", "export", "--format", "csv"])
        .env("DATABASE_URL", format!("sqlite://{database_path}"))
        .env("RUST_LOG", "warn");
    let ours = measure(ours, rows)?;
    let mut baseline = Command::new("sqlite3");
    baseline.args(["-csv", "-header", database_path, "SELECT * FROM audit_events ORDER BY seq"]);
    Ok((ours, measure(baseline, rows)?))
}
