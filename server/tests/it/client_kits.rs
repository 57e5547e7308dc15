//! The client kits' order-intake examples against the real server (the source's story): the registration's
//! answer lost and its retry replayed, the order placed once although its answer was lost, the 5,000 yen
//! correction refused by the order system, the summary never started, the stall, and the approved rerun of the
//! summary alone through the kit's receiver — one order, one summary. The kit's receiver also passes the
//! conformance check. The kits are installed by `make deps-test` (target/kits-py-venv, clients/typescript).
use crate::fixtures::{caller, count, submitted};
use crate::harness::{RERUN_SECRET, TestApp};
use backend::services::{approvals, conformance, dispatcher::dispatch_due, sweeper::sweep};
use chrono::{Duration, Utc};
use domain::approval::Decision;
use domain::audit::{Actor, SystemActor};
use reqwest::Method;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use tokio::io::{AsyncBufReadExt, BufReader, Lines};
use tokio::process::{Child, ChildStdout, Command};

enum Kit {
    Python,
    TypeScript,
}

impl Kit {
    /// The program and the example's script, or a clear failure when the kit is not installed.
    fn command(&self, example: &str) -> Command {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let (program, script) = match self {
            Kit::Python => (root.join("target/kits-py-venv/bin/python"), format!("{example}.py")),
            Kit::TypeScript => (PathBuf::from("node"), format!("{example}.mjs")),
        };
        let dir = root.join(match self {
            Kit::Python => "clients/python",
            Kit::TypeScript => "clients/typescript",
        });
        let installed = match self {
            Kit::Python => program.exists(),
            Kit::TypeScript => dir.join("dist/index.js").exists(),
        };
        assert!(installed, "the {} kit is not installed: run `make deps-test`", dir.display());
        let mut command = Command::new(program);
        command.arg(format!("examples/order-intake/{script}")).current_dir(dir).kill_on_drop(true);
        command
    }
}

struct Story {
    app: TestApp,
    env: Vec<(&'static str, String)>,
    state: PathBuf,
}

impl Drop for Story {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.state);
    }
}

async fn story(kit: &Kit, process_id: &str) -> (Story, Child, Lines<BufReader<ChildStdout>>) {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    // The server's clock 40 minutes behind the real time, so that the summary's deadline can pass and the
    // signed rerun still carries a timestamp the receiver (on the real clock) takes as fresh.
    let app = TestApp::spawn_at(
        Utc::now() - Duration::minutes(40),
        |s| s.demo_systems = true,
        |_| {
            let mut config = crate::harness::example_config();
            let intake = config.workflows.iter_mut().find(|w| w.name == "order-intake").unwrap();
            intake.rerun_url = format!("http://127.0.0.1:{port}/rerun");
            config
        },
    )
    .await;
    let token = app.token("order-intake", &["sales"]).await;
    // The kit's file stores (seqs, received webhook-ids), as an integration keeps them on its disk.
    let state = std::env::temp_dir().join(format!("rerun-gate-kit-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&state).unwrap();
    let env = vec![
        ("RERUN_GATE_URL", app.url.clone()),
        ("RERUN_GATE_TOKEN", token),
        ("OUTSIDE_URL", format!("{}/demo", app.url)),
        ("RERUN_GATE_SIGNING_SECRET", RERUN_SECRET.to_string()),
        ("STATE_DIR", state.display().to_string()),
        ("PROCESS_ID", process_id.to_string()),
        ("RECEIVER_PORT", port.to_string()),
    ];
    let story = Story { app, env, state };
    let mut receiver = kit.command("receiver").envs(story.env.clone()).stdout(Stdio::piped()).spawn().unwrap();
    let mut lines = BufReader::new(receiver.stdout.take().unwrap()).lines();
    let ready = tokio::time::timeout(std::time::Duration::from_secs(30), lines.next_line()).await;
    let ready = ready.expect("the receiver starts within 30 s").unwrap().unwrap_or_default();
    assert_eq!(ready, format!("listening {port}"));
    (story, receiver, lines)
}

async fn the_order_intake_story(kit: Kit, process_id: &str) {
    let (story, _receiver, mut lines) = story(&kit, process_id).await;
    let app = &story.app;
    let intake = kit.command("intake").envs(story.env.clone()).output().await.unwrap();
    let said = String::from_utf8_lossy(&intake.stdout);
    assert!(intake.status.success(), "{said}\n{}", String::from_utf8_lossy(&intake.stderr));
    let result: Value = serde_json::from_str(said.lines().last().unwrap_or_default()).unwrap();
    for fact in ["registered", "registration_replayed", "order_replayed", "correction_refused"] {
        assert_eq!(result[fact], true, "{fact}: {result}");
    }

    // The summary never started: its deadline passes and the sweeper finds the stall.
    app.clock.advance(Duration::minutes(40));
    sweep(&app.state).await.unwrap();
    let token = &story.env[1].1;
    let path = format!("/api/v1/operations/{process_id}");
    let operation = app.api(Method::GET, &path, token, None, None).await.json();
    assert_eq!(operation["status"], "stalled", "{operation}");
    assert_eq!(operation["steps"][0]["latest_verdict"], "executed", "the order's content matches: {operation}");

    // The kit's receiver meets every expectation of the conformance check.
    let actor = Actor::system(SystemActor::CommandLine);
    let checked = conformance::check(&app.state, actor, None, "order-intake", Default::default()).await.unwrap();
    let report = words::conformance::report_in(words::i18n::Locale::en, &checked);
    assert!(checked.all_met(), "{report}");

    // A staff member asks, the owner approves, the dispatcher sends the summary alone.
    app.user("sato", &["staff"], &["sales"]).await;
    app.user("suzuki", &["manager"], &["sales"]).await;
    let (staff, owner) = (caller(app, "sato").await, caller(app, "suzuki").await);
    let id = submitted(app, &staff, process_id).await;
    approvals::decide(&app.state, &owner, &id, Decision::Approve, "").await.unwrap();
    assert_eq!(dispatch_due(&app.state).await.unwrap(), 1);
    let mut handled = Vec::new();
    while let Ok(Ok(Some(line))) = tokio::time::timeout(std::time::Duration::from_secs(20), lines.next_line()).await {
        let line: Value = serde_json::from_str(&line).unwrap();
        if line["outcome"] == "done" {
            handled.push(line);
            break;
        }
    }
    assert_eq!(handled.len(), 1, "the rerun reached the receiver");
    assert_eq!((&handled[0]["webhook_id"], &handled[0]["steps"]), (&json!(id), &json!(["ai_summary"])));
    let mut status = Value::Null;
    for _ in 0..100 {
        status = app.api(Method::GET, &path, token, None, None).await.json()["status"].clone();
        if status == "completed" {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(status, "completed");

    // One order (its lost answer replayed once, the correction refused once), one summary.
    let sql = "SELECT COUNT(*) FROM demo_executions WHERE process_id = $1 AND service = 'orders'";
    assert_eq!(count(app, sql, process_id).await, 1, "one order");
    let sql = "SELECT COUNT(*) FROM demo_executions WHERE process_id = $1 AND service = 'ai'";
    assert_eq!(count(app, sql, process_id).await, 1, "one summary");
    let sql = "SELECT replays * 10 + conflicts FROM demo_executions WHERE process_id = $1 AND service = 'orders'";
    assert_eq!(count(app, sql, process_id).await, 11, "one replay, one refused correction");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_typescript_kits_order_intake_registers_once_and_its_approved_rerun_makes_one_summary() {
    the_order_intake_story(Kit::TypeScript, "ORD-TS-5001").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_kits_order_intake_registers_once_and_its_approved_rerun_makes_one_summary() {
    the_order_intake_story(Kit::Python, "ORD-PY-5001").await;
}

/// The code blocks of the integration guide and the kits' READMEs marked runnable (```python runnable, ```js
/// runnable), in the order they stand.
fn runnable_blocks() -> Vec<(String, Kit, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut blocks = Vec::new();
    for doc in ["docs/integration.md", "clients/python/README.md", "clients/typescript/README.md"] {
        let text = std::fs::read_to_string(root.join(doc)).unwrap();
        let mut lines = text.lines().enumerate();
        while let Some((at, line)) = lines.next() {
            let kit = match line.trim() {
                "```python runnable" => Kit::Python,
                "```js runnable" => Kit::TypeScript,
                _ => continue,
            };
            let code: Vec<&str> = lines.by_ref().map(|(_, l)| l).take_while(|l| l.trim() != "```").collect();
            blocks.push((format!("{doc}:{}", at + 1), kit, code.join("\n") + "\n"));
        }
    }
    blocks
}

/// Issue 62: the guide's code runs as written. Each block against a server of its own, as a new integration
/// would: it registers, reports its step through the kit and builds the receiver; the step is succeeded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_runnable_code_of_the_integration_guide_and_the_kits_readmes_runs_as_written() {
    let blocks = runnable_blocks();
    let python = blocks.iter().filter(|(_, kit, _)| matches!(kit, Kit::Python)).count();
    assert!(python >= 2 && blocks.len() >= 4, "the guide's and both READMEs' blocks: {:?}", blocks.len());
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..").canonicalize().unwrap();
    for (place, kit, code) in blocks {
        let app = TestApp::spawn().await;
        let token = app.token("order-intake", &["sales"]).await;
        let dir = std::env::temp_dir().join(format!("rerun-gate-doc-{}", uuid::Uuid::new_v4().simple()));
        std::fs::create_dir_all(dir.join("node_modules")).unwrap();
        // As an integration's project has the kit installed: `import … from "rerun-gate"` resolves to it.
        std::os::unix::fs::symlink(root.join("clients/typescript"), dir.join("node_modules/rerun-gate")).unwrap();
        let (program, file) = match kit {
            Kit::Python => (root.join("target/kits-py-venv/bin/python"), dir.join("block.py")),
            Kit::TypeScript => (PathBuf::from("node"), dir.join("block.mjs")),
        };
        std::fs::write(&file, &code).unwrap();
        let ran = Command::new(program)
            .arg(&file)
            .current_dir(&dir)
            .env("RERUN_GATE_URL", &app.url)
            .env("RERUN_GATE_TOKEN", &token)
            .env("RERUN_GATE_SIGNING_SECRET", RERUN_SECRET)
            .output();
        let ran = tokio::time::timeout(std::time::Duration::from_secs(60), ran).await.expect("ends").unwrap();
        let (out, err) = (String::from_utf8_lossy(&ran.stdout), String::from_utf8_lossy(&ran.stderr));
        assert!(ran.status.success(), "{place} does not run as written:\n{out}\n{err}");
        assert_eq!(out.trim(), "succeeded", "{place}: {err}");
        let operation = app.api(Method::GET, "/api/v1/operations/ORD-5001", &token, None, None).await.json();
        assert_eq!(operation["steps"][0]["state"], "succeeded", "{place}");
        let _ = std::fs::remove_dir_all(dir);
    }
}
