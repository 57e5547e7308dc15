//! The demo as `make run` serves it — its people with their one-time passwords, the seed's cases, the demo
//! outside systems and the demo integration that receives the reruns — and its people acting through the
//! server functions the pages call.
use crate::harness::{Answer, TestApp, guide_script, public_key_file};
use backend::demo::systems::{Execution, Service};
use backend::services::{dispatcher::dispatch_due, sweeper};
use chrono::Duration;
use reqwest::StatusCode;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::time::Instant;

pub struct Demo {
    pub app: TestApp,
    passwords: HashMap<String, String>,
    started: Instant,
    name: &'static str,
}

/// Someone of the demo, signed in.
pub struct Person<'a> {
    demo: &'a Demo,
    pub username: String,
    cookie: String,
}

impl Demo {
    /// The demo loaded into a fresh database (`serve --demo` on its first start); `name` is the story's.
    pub async fn start(name: &'static str) -> Demo {
        let started = Instant::now();
        let app = TestApp::spawn_with_demo_loop().await;
        let credentials = backend::demo::load_if_empty(&app.state).await.unwrap().expect("an empty database");
        let passwords = credentials.into_iter().map(|c| (c.username, c.password)).collect();
        Demo { app, passwords, started, name }
    }

    /// `username` signs in with the password the demo printed.
    pub async fn signs_in(&self, username: &str) -> Person<'_> {
        let cookie = self.app.sign_in(username, &self.passwords[username]).await;
        Person { demo: self, username: username.into(), cookie }
    }

    /// The dispatcher's round, as its worker runs it: every approved rerun due is sent.
    pub async fn dispatcher_runs(&self) -> usize {
        self.app.clock.advance(Duration::seconds(6));
        let mut sent = 0;
        loop {
            let n = dispatch_due(&self.app.state).await.unwrap();
            if n == 0 {
                return sent;
            }
            sent += n;
        }
    }

    /// The sweeper's round after `seconds`, as its worker runs it.
    pub async fn sweeper_runs_after(&self, seconds: i64) {
        self.app.clock.advance(Duration::seconds(seconds));
        sweeper::sweep(&self.app.state).await.unwrap();
    }

    /// The operation as the ingestion API answers it.
    pub async fn operation(&self, process_id: &str) -> Value {
        let mut tx = self.app.db().begin_read().await.unwrap();
        let view = backend::services::operations::view_in(&mut tx, process_id).await.unwrap();
        serde_json::to_value(view.expect("the operation exists")).unwrap()
    }

    /// Waits (the demo integration works in the background) until the operation is `status`.
    pub async fn operation_becomes(&self, process_id: &str, status: &str) {
        let mut now = Value::Null;
        for _ in 0..300 {
            now = self.operation(process_id).await["status"].clone();
            if now == status {
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        panic!("{process_id} stayed {now}, never {status}");
    }

    /// What the demo outside system `service` holds under `key`.
    pub async fn outside(&self, service: Service, key: &str) -> Option<Execution> {
        self.app.demo_systems().find_by_key(service, key, None).await.unwrap()
    }

    /// How many reruns the demo integration received (each `webhook-id` once).
    pub async fn reruns_received(&self) -> i64 {
        backend::db::demo_systems::reruns_received(&mut self.app.db().begin_read().await.unwrap()).await.unwrap()
    }

    /// The audit actions recorded on this operation, oldest first.
    pub async fn actions_on(&self, process_id: &str) -> Vec<String> {
        let mut tx = self.app.db().begin_read().await.unwrap();
        let events = backend::db::audit::page_after(&mut tx, 0, 100_000).await.unwrap();
        events.into_iter().filter(|e| e.object_id == process_id).map(|e| e.action).collect()
    }

    /// The bulk rerun once its look-ups are done, as its page shows it to `person`.
    pub async fn batch_previewed(&self, person: &Person<'_>, id: &str) -> Value {
        for _ in 0..400 {
            let batch = person.calls("batches/load", &[("id", id)]).await;
            if batch["status"] != "previewing" {
                return batch;
            }
            tokio::time::sleep(std::time::Duration::from_millis(25)).await;
        }
        panic!("{id} still previewing");
    }

    /// An approved bulk rerun runs its stages as the workers run them — the dispatcher at the batch's rate, the
    /// demo integration performing each rerun, the sweeper proving each stage at the outside systems after its
    /// settle time — until every operation completed and the batch with them. The canary's size.
    pub async fn bulk_runs_its_stages(&self, person: &Person<'_>, id: &str, operations: &[String]) -> usize {
        let mut last = Value::Null;
        for _ in 0..600 {
            self.app.clock.advance(Duration::seconds(1));
            while dispatch_due(&self.app.state).await.unwrap() > 0 {}
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            sweeper::sweep(&self.app.state).await.unwrap();
            let mut done = 0;
            for process_id in operations {
                done += usize::from(self.operation(process_id).await["status"] == "completed");
            }
            let batch = person.calls("batches/load", &[("id", id)]).await;
            let stages = batch["stages"]["stages"].as_array().expect("a bulk rerun in stages").clone();
            last = json!({"status": batch["status"], "stages": stages, "done": done, "members": batch["members"]});
            // Every stage before the last proven at the outside systems (the last goes without a verdict today:
            // issue 82 asks for it to be proven too).
            let proven = stages[..stages.len() - 1].iter().all(|s| s["outcome"] == "passed");
            if done == operations.len() && batch["status"] == "completed" && proven {
                return stages[0]["operations"].as_u64().unwrap() as usize;
            }
            assert!(stages.iter().all(|s| s["outcome"] != "failed"), "a stage failed: {stages:?}");
        }
        panic!("{id}: not every operation completed: {last:#}");
    }

    /// The story's end: its time, said for the closing notes.
    pub fn ends(self) {
        eprintln!("story {}: {:.1} s", self.name, self.started.elapsed().as_secs_f64());
    }
}

impl Person<'_> {
    /// A server function the pages call, which must answer 200; its JSON answer.
    pub async fn calls(&self, endpoint: &str, form: &[(&str, &str)]) -> Value {
        let answer = self.tries(endpoint, form).await;
        assert_eq!(answer.status, StatusCode::OK, "{} → {endpoint}: {}", self.username, answer.body);
        if answer.body.is_empty() { Value::Null } else { answer.json() }
    }

    /// The same, whatever it answers.
    pub async fn tries(&self, endpoint: &str, form: &[(&str, &str)]) -> Answer {
        self.demo.app.call(endpoint, form, Some(&self.cookie)).await
    }

    /// A server function that takes JSON.
    pub async fn calls_json(&self, endpoint: &str, body: Value) -> Value {
        let answer = self.demo.app.call_json(endpoint, body, Some(&self.cookie)).await;
        assert_eq!(answer.status, StatusCode::OK, "{} → {endpoint}: {}", self.username, answer.body);
        answer.json()
    }

    /// A page or file (`GET`), which must answer 200.
    pub async fn downloads(&self, path: &str) -> Vec<u8> {
        let answer = self.demo.app.http.get(format!("{}{path}", self.demo.app.url)).header("cookie", &self.cookie);
        let answer = answer.send().await.unwrap();
        assert_eq!(answer.status(), StatusCode::OK, "{} → {path}", self.username);
        answer.bytes().await.unwrap().to_vec()
    }

    /// The process IDs the stalled-operations board lists for this person.
    pub async fn board(&self) -> Vec<Value> {
        let page = self.calls_json("board/stalled", json!({"filter": {}})).await;
        page["rows"].as_array().expect("the board's rows").clone()
    }

    /// Starts a rerun request from the operation's page; the new request's ID.
    pub async fn starts_a_rerun_request(&self, process_id: &str, reason: &str) -> String {
        let started = self.calls("reruns/start", &[("process_id", process_id), ("reason", reason)]).await;
        started["Created"]["id"].as_str().unwrap_or_else(|| panic!("{process_id}: not created: {started}")).into()
    }

    /// Goes through the five checks of a request (`reruns`) or a bulk rerun (`batches`), each with a comment.
    pub async fn confirms_the_five_checks(&self, of: &str, id: &str) {
        for number in 1..=5 {
            let n = number.to_string();
            let mut form = vec![("id", id), ("number", n.as_str()), ("comment", "確認しました")];
            if number == 5 {
                form.extend([("cause_class", "outside_service_outage"), ("cause_text", "応答が失われた")]);
            }
            self.calls(&format!("{of}/confirm"), &form).await;
        }
    }

    /// Approves a request from the approvals page.
    pub async fn approves(&self, id: &str) {
        let inbox = self.calls("approvals/inbox", &[]).await;
        assert!(inbox.to_string().contains(id), "{} finds {id} in the inbox: {inbox}", self.username);
        self.calls("approvals/decide", &[("id", id), ("approve", "true"), ("comment", "確認しました")]).await;
    }

    /// The auditor exports the whole trail and checks it offline with `server audit verify`, then downloads
    /// the operation's evidence ZIP and proves each of its events with the security guide's script; the
    /// actions the evidence holds.
    pub async fn verifies_the_trail_and_the_evidence_of(&self, process_id: &str) -> Vec<String> {
        let export = self.downloads("/audit/export?format=jsonl").await;
        let file = temp_file(&export, "jsonl");
        let verified = crate::harness::server_command(env!("CARGO_BIN_EXE_server"))
            .args(["audit", "verify", "--file", file.to_str().unwrap()])
            .args(["--public-key", public_key_file().to_str().unwrap()])
            .env("DATABASE_URL", "sqlite://unused-by-an-offline-check.db")
            .output()
            .unwrap();
        let said = String::from_utf8_lossy(&verified.stdout);
        assert!(verified.status.success(), "the exported trail verifies: {said}");
        let bundle = self.downloads(&format!("/operations/{process_id}/evidence.zip")).await;
        let zip = temp_file(&bundle, "zip");
        let proven = guide_script("zipfile", &[&zip, public_key_file()]);
        let said = String::from_utf8_lossy(&proven.stdout);
        assert!(proven.status.success(), "the evidence proves its events: {said}");
        let _ = (std::fs::remove_file(file), std::fs::remove_file(zip));
        evidence_actions(&bundle)
    }
}

fn temp_file(bytes: &[u8], extension: &str) -> std::path::PathBuf {
    let path = std::env::temp_dir().join(format!("story-{}.{extension}", uuid::Uuid::new_v4().simple()));
    std::fs::write(&path, bytes).unwrap();
    path
}

/// The actions of the audit events an evidence ZIP carries.
fn evidence_actions(bundle: &[u8]) -> Vec<String> {
    use std::io::Read;
    let mut zip = zip::ZipArchive::new(std::io::Cursor::new(bundle)).unwrap();
    let mut events = String::new();
    for i in 0..zip.len() {
        let mut file = zip.by_index(i).unwrap();
        if file.name().unwrap().ends_with("/audit_events.jsonl") {
            file.read_to_string(&mut events).unwrap();
        }
    }
    let rows = events.lines().map(|l| serde_json::from_str::<Value>(l).unwrap());
    rows.filter_map(|row| row["action"].as_str().map(str::to_string)).collect()
}

/// Asserts that `actions` holds each of `expected`, in this order (others may come between).
pub fn in_order(actions: &[String], expected: &[&str]) {
    let mut rest = actions.iter();
    for want in expected {
        assert!(rest.any(|a| a == want), "{want} missing or out of order in {actions:?}");
    }
}

/// What the outside system holds of it (its replays and refused calls under the key with it).
pub fn once(execution: Option<Execution>, what: &str) -> Execution {
    execution.unwrap_or_else(|| panic!("{what}: not at the outside system"))
}

pub use backend::demo::systems::Service::{Ai, Billing, Mail, Orders};
pub type OutsideService = Service;
