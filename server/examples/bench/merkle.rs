//! The audit trail's Merkle tree (issue 67): step events appended while the tree follows them, against the same
//! with no tree (same run, in this process); then, at a million events, the tree made from the trail, one
//! event's inclusion proof (its hashes, and the time to produce it against reading the event alone), and the
//! security guide's Python check of a bundle of one event against the interpreter starting with its modules.
use backend::Db;
use backend::services::{audit_tree, registration, step_events};
use serde_json::json;
use std::io::Write;
use std::process::Command;
use std::time::{Duration, Instant};

pub struct Merkle {
    pub with_tree: f64,
    pub without_tree: f64,
    /// At a million events (SQLite: the trail is filled straight into its table).
    pub at_scale: Option<AtScale>,
}

pub struct AtScale {
    pub events: u64,
    /// The events the tree was made from in one go (the trail's backlog), and how long that took.
    pub built: u64,
    pub build_seconds: f64,
    pub proofs: usize,
    pub longest_proof: usize,
    pub proof_p50_ms: f64,
    pub proof_p99_ms: f64,
    pub read_p50_ms: f64,
    pub read_p99_ms: f64,
    pub script_ms: f64,
    pub interpreter_ms: f64,
}

const ROUNDS: usize = 3;
const CLIENTS: usize = 4;
const EVENTS_PER_CLIENT: usize = 500;
const PROOFS: usize = 1_000;

pub async fn run(db: &Db, events: usize) -> anyhow::Result<Merkle> {
    // The tree made from the trail first: each append round below begins by catching the tree up, which would
    // leave nothing to make (the full run's export part fills the trail before this part).
    let built = match db.engine() {
        "sqlite" => Some(build(db, events).await?),
        _ => None,
    };
    let (mut with_tree, mut without_tree) = (Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        without_tree.push(append_rate(db, false).await?);
        with_tree.push(append_rate(db, true).await?);
    }
    let at_scale = match built {
        Some(built) => Some(at_scale(db, built).await?),
        None => None,
    };
    Ok(Merkle { with_tree: median(with_tree), without_tree: median(without_tree), at_scale })
}

/// The trail filled to `events`, then the tree grown over all the events it does not hold yet: how many, and
/// in how many seconds.
async fn build(db: &Db, events: usize) -> anyhow::Result<(u64, f64)> {
    let head = backend::db::audit::head(&mut db.connection().await?).await?.0 as usize;
    if head < events {
        super::export::fill(db, events - head).await?;
    }
    let before = backend::db::audit_tree::head(&mut db.connection().await?).await?.size;
    let started = Instant::now();
    let size = audit_tree::follow(db).await.map_err(|e| anyhow::anyhow!("{e}"))?;
    Ok((size - before, started.elapsed().as_secs_f64()))
}

async fn at_scale(db: &Db, (built, build_seconds): (u64, f64)) -> anyhow::Result<AtScale> {
    let size = audit_tree::follow(db).await.map_err(|e| anyhow::anyhow!("{e}"))?;
    let (mut proof_ms, mut read_ms, mut longest_proof) = (Vec::new(), Vec::new(), 0);
    let mut random = 0x2545_f491_4f6c_dd1d_u64;
    for _ in 0..PROOFS {
        random ^= random << 13;
        random ^= random >> 7;
        random ^= random << 17;
        let seq = (random % size) as i64 + 1;
        let started = Instant::now();
        let hash = backend::db::audit_proof::event_hash(&mut db.connection().await?, seq).await?.unwrap_or_default();
        read_ms.push(started.elapsed().as_secs_f64() * 1000.0);
        let started = Instant::now();
        let proof = audit_tree::inclusion(db, seq, &hash, size).await.map_err(|e| anyhow::anyhow!("{e}"))?;
        proof_ms.push(started.elapsed().as_secs_f64() * 1000.0);
        longest_proof = longest_proof.max(proof.proof.len());
    }
    let (script_ms, interpreter_ms) = guide_check(db, size).await?;
    Ok(AtScale {
        events: size,
        built,
        build_seconds,
        proofs: PROOFS,
        longest_proof,
        proof_p50_ms: percentile(&mut proof_ms, 0.50),
        proof_p99_ms: percentile(&mut proof_ms, 0.99),
        read_p50_ms: percentile(&mut read_ms, 0.50),
        read_p99_ms: percentile(&mut read_ms, 0.99),
        script_ms,
        interpreter_ms,
    })
}

fn median(mut values: Vec<f64>) -> f64 {
    percentile(&mut values, 0.5)
}

fn percentile(values: &mut [f64], p: f64) -> f64 {
    values.sort_by(f64::total_cmp);
    values[((values.len() - 1) as f64 * p).round() as usize]
}

/// Step events per second through the service from a few clients at once, each on its own operation; with the
/// tree following the trail every second as `serve` does, or with no tree at all.
async fn append_rate(db: &Db, tree: bool) -> anyhow::Result<f64> {
    let (state, _) = super::start_app(db.clone()).await?;
    audit_tree::follow(db).await.map_err(|e| anyhow::anyhow!("{e}"))?; // no backlog from before the round
    let client = super::sales_client(&state).await?;
    let mut ids = Vec::new();
    for _ in 0..CLIENTS {
        let id = format!("TREE-{}", uuid::Uuid::new_v4().simple());
        registration::register(&state, &client, &id, &super::order_intake(&id))
            .await
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        ids.push(id);
    }
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let follower = tree.then(|| {
        let (db, mut stopped) = (db.clone(), stopped.clone());
        tokio::spawn(async move {
            while !*stopped.borrow() {
                let _ = audit_tree::follow(&db).await;
                let _ = tokio::time::timeout(Duration::from_secs(1), stopped.changed()).await;
            }
        })
    });
    let started = Instant::now();
    let mut workers = Vec::new();
    for id in ids {
        let (state, client) = (state.clone(), client.clone());
        workers.push(tokio::spawn(async move {
            for seq in 1..=EVENTS_PER_CLIENT as i64 {
                let body = match seq % 2 {
                    1 => json!({"seq": seq, "type": "started"}),
                    _ => json!({"seq": seq, "type": "failed", "error": {"class": "server_error", "message": "503"}}),
                };
                let event = serde_json::from_value(body)?;
                step_events::report(&state, &client, &id, "register_order", event)
                    .await
                    .map_err(|e| anyhow::anyhow!("{e}"))?;
            }
            Ok::<(), anyhow::Error>(())
        }));
    }
    for worker in workers {
        worker.await??;
    }
    let rate = (CLIENTS * EVENTS_PER_CLIENT) as f64 / started.elapsed().as_secs_f64();
    let _ = stop.send(true);
    if let Some(follower) = follower {
        follower.await?;
    }
    drop(stopped);
    Ok(rate)
}

/// The security guide's Python check of a bundle holding one event of the million and its proof against a
/// signed tree head (median of five runs), and the interpreter starting with the same modules (median of five).
async fn guide_check(db: &Db, size: u64) -> anyhow::Result<(f64, f64)> {
    let seq = (size / 3) as i64 + 1;
    let event = backend::db::audit::page_after(&mut db.connection().await?, seq - 1, 1).await?.remove(0);
    let mut proof = audit_tree::inclusion(db, seq, &event.hash, size).await.map_err(|e| anyhow::anyhow!("{e}"))?;
    let head_hash = backend::db::audit_proof::event_hash(&mut db.connection().await?, size as i64).await?;
    let key = domain::audit_proof::AuditKey::generate();
    let head = key.sign(size as i64, &head_hash.unwrap_or_default(), Some(&proof.root), chrono::Utc::now());
    proof.checkpoint = Some(head);
    let dir = std::env::temp_dir().join(format!("bench-proof-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir)?;
    let (bundle, public_key, script) = (dir.join("bundle.zip"), dir.join("audit.pub"), dir.join("check.py"));
    let mut zip = zip::ZipWriter::new(std::fs::File::create(&bundle)?);
    zip.start_file("bench/audit_events.jsonl", zip::write::SimpleFileOptions::default())?;
    writeln!(zip, "{}", domain::audit_export::jsonl_row(&event))?;
    zip.start_file("bench/audit_proofs.jsonl", zip::write::SimpleFileOptions::default())?;
    writeln!(zip, "{}", serde_json::to_string(&proof)?)?;
    zip.finish()?;
    std::fs::write(&public_key, key.public().to_pem())?;
    let guide = std::fs::read_to_string("docs/security.md")?;
    let check = guide
        .split("```python\n")
        .filter_map(|block| block.split_once("```").map(|(code, _)| code))
        .find(|code| code.contains("zipfile"))
        .ok_or_else(|| anyhow::anyhow!("docs/security.md shows no bundle check"))?;
    std::fs::write(&script, check)?;
    let imports = "import base64, hashlib, json, sys, zipfile\n\
                   from cryptography.hazmat.primitives.serialization import load_pem_public_key";
    let (mut checked, mut started_only) = (Vec::new(), Vec::new());
    for _ in 0..5 {
        let started = Instant::now();
        let output = Command::new("python3").arg(&script).arg(&bundle).arg(&public_key).output()?;
        anyhow::ensure!(
            output.status.success(),
            "the guide's check failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        checked.push(started.elapsed().as_secs_f64() * 1000.0);
        let started = Instant::now();
        anyhow::ensure!(Command::new("python3").args(["-c", imports]).status()?.success(), "python3 with cryptography");
        started_only.push(started.elapsed().as_secs_f64() * 1000.0);
    }
    let _ = std::fs::remove_dir_all(dir);
    Ok((median(checked), median(started_only)))
}
