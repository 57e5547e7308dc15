//! A request's own writes are never "the facts changed" (QUALITY 41): for every combination of what the outside
//! systems can say of an order intake's two steps, start → the five checks → submit is never refused as a plan
//! that changed — alone or as a bulk rerun's member — unless something outside the request changed in between,
//! and then it always is. Each combination is an operation of one app, its facts made as they arise: the demo
//! outside systems hold the work (or not), the sweeper looks it up, and the integration reports what it saw; the
//! verdicts no demo system gives (unknown, a failed look-up) are recorded as a look-up records them.
use crate::fixtures::caller;
use crate::harness::TestApp;
use backend::Clock;
use backend::demo::systems::Service;
use backend::services::{Caller, batches, reconciliation, rerun_requests, sweeper};
use chrono::Duration;
use contract::AppError;
use contract::batches::Selection;
use contract::reruns::StartAnswer;
use domain::batches::Reason;
use domain::conflict::Conflict;
use domain::reconciliation::{Basis, Evidence, Verdict};
use reqwest::Method;
use serde_json::{Value, json};

/// What the outside system says of one step (and whether its flag is set).
#[derive(Clone, Copy, Debug, PartialEq)]
enum Fact {
    /// Done, content compared and equal, the integration's report of success received: its flag is set.
    Flagged,
    Executed,
    /// Done, but nothing of the record compares with the step's content.
    NotCompared,
    Mismatch,
    NotExecuted,
    /// The AI accepted the job and is still generating.
    InProgress,
    Unknown,
    LookupFailed,
}

const ALL: [Fact; 8] = [
    Fact::Flagged,
    Fact::Executed,
    Fact::NotCompared,
    Fact::Mismatch,
    Fact::NotExecuted,
    Fact::InProgress,
    Fact::Unknown,
    Fact::LookupFailed,
];
const STEPS: [(&str, Service); 2] = [("register_order", Service::Orders), ("ai_summary", Service::Ai)];

fn content(process_id: &str) -> Value {
    json!({"item": "チェア", "amount": 4000 + process_id.len()})
}

/// Whether the demo outside systems can give this fact of this step by themselves (a bulk rerun's preview asks
/// them again, so its members' facts must be theirs).
fn outside_gives(fact: Fact, service: Service) -> bool {
    match fact {
        Fact::Unknown | Fact::LookupFailed => false,
        Fact::InProgress => service == Service::Ai,
        _ => true,
    }
}

struct Lab {
    app: TestApp,
    token: String,
    staff: Caller,
}

impl Lab {
    async fn new() -> Lab {
        let app = TestApp::spawn_with_demo_systems().await;
        let token = app.token("intake", &["sales"]).await;
        app.user("sato", &["staff"], &["sales"]).await;
        let staff = caller(&app, "sato").await;
        Lab { app, token, staff }
    }

    async fn report(&self, process_id: &str, step: &str, event: Value) {
        let path = format!("/api/v1/operations/{process_id}/steps/{step}/events");
        self.app.api(Method::POST, &path, &self.token, None, Some(&event)).await;
    }

    /// Registered, its outside work done (before `late`: the AI jobs still generating) and its events reported.
    async fn operation(&self, process_id: &str, facts: [Fact; 2]) {
        let steps: Vec<Value> = STEPS
            .iter()
            .map(|(s, _)| json!({"name": s, "idempotency_key": format!("{process_id}-{s}"), "content": content(process_id)}))
            .collect();
        let body = json!({"process_id": process_id, "workflow": "order-intake", "department": "sales", "steps": steps});
        self.app.api(Method::POST, "/api/v1/operations", &self.token, Some(process_id), Some(&body)).await;
        let mut failed_one = false;
        for ((step, service), fact) in STEPS.iter().zip(facts) {
            let sent = match fact {
                Fact::Flagged | Fact::Executed => Some(content(process_id)),
                Fact::NotCompared => Some(json!({"note": "a record with nothing in common"})),
                Fact::Mismatch => Some(json!({"item": "チェア", "amount": 1})),
                _ => None,
            };
            if let Some(sent) = sent {
                let key = format!("{process_id}-{step}");
                self.app.demo_systems().execute(*service, &key, &sent, Some(process_id)).await.unwrap();
            }
            let event = if fact == Fact::Flagged {
                json!({"seq": 1, "type": "succeeded"})
            } else if !failed_one {
                failed_one = true;
                json!({"seq": 1, "type": "failed", "error": {"class": "server_error", "message": "503"}})
            } else {
                continue;
            };
            self.report(process_id, step, event).await;
        }
    }

    /// The AI jobs accepted just before the look-up, still generating when it asks.
    async fn late_work(&self, process_id: &str, facts: [Fact; 2]) {
        for ((step, service), fact) in STEPS.iter().zip(facts) {
            if fact == Fact::InProgress && *service == Service::Ai {
                let key = format!("{process_id}-{step}");
                self.app.demo_systems().execute(*service, &key, &content(process_id), Some(process_id)).await.unwrap();
            }
        }
    }

    /// The verdicts no demo system gives, recorded as a look-up records them.
    async fn recorded_verdicts(&self, process_id: &str, facts: [Fact; 2]) {
        let mut tx = self.app.db().begin_write().await.unwrap();
        let operation = backend::db::operations::by_process_id(&mut tx, process_id).await.unwrap().unwrap();
        let steps = backend::db::operations::steps(&mut tx, operation.id).await.unwrap();
        for ((name, _), fact) in STEPS.iter().zip(facts) {
            let (verdict, basis) = match fact {
                Fact::Unknown => (Verdict::Unknown, Basis::NotFoundProvesNothing),
                Fact::LookupFailed => (Verdict::LookupFailed, Basis::LookupFailed { detail: "HTTP 500".into() }),
                _ => continue,
            };
            let evidence = serde_json::to_string(&Evidence::of(basis)).unwrap();
            let step = steps.iter().find(|s| s.name == *name).unwrap();
            let new = backend::db::reconciliations::NewReconciliation {
                step_id: step.id,
                connector: "order-api",
                verdict: verdict.as_str(),
                external_id: None,
                evidence_json: &evidence,
                asked_by: "system:sweeper",
                recorded_by: None,
                records: 0,
            };
            backend::db::reconciliations::insert(&mut tx, &new, self.app.clock.now()).await.unwrap();
        }
        tx.commit().await.unwrap();
    }

    /// Something outside the request changes the facts: the outside system now holds a planned step's work,
    /// and staff ask again.
    async fn outside_changes(&self, process_id: &str, planned: &str) {
        let (_, service) = STEPS.iter().find(|(s, _)| *s == planned).unwrap();
        let key = format!("{process_id}-{planned}");
        self.app.demo_systems().execute(*service, &key, &content(process_id), Some(process_id)).await.unwrap();
        self.app.clock.advance(Duration::seconds(30)); // the AI's job done
        reconciliation::on_demand(&self.app.state, &self.staff, process_id).await.unwrap();
    }

    async fn confirm_five(&self, of_batch: bool, id: &str) {
        for n in 1..=5 {
            let cause =
                rerun_requests::Cause { class: Some("outside_service_outage".into()), text: Some("503".into()) };
            let confirmed = if of_batch {
                batches::confirm(&self.app.state, &self.staff, id, n, "確認した", cause).await
            } else {
                rerun_requests::confirm(&self.app.state, &self.staff, id, n, "確認した", cause).await
            };
            confirmed.unwrap();
        }
    }

    /// Start → (a person confirms the steps resting on the key alone) → the five checks → (`between`) → submit.
    async fn single(&self, process_id: &str, outside_change: bool) -> Result<Option<()>, String> {
        let s = &self.app.state;
        let id = match rerun_requests::start(s, &self.staff, process_id, "再実行する").await {
            Ok(StartAnswer::Created { id }) => id,
            Ok(_) | Err(AppError::Conflict { problem: Conflict::NotStalled, .. }) => return Ok(None),
            Err(other) => return Err(format!("start: {other:?}")),
        };
        let plan = backend::db::rerun_requests::by_id(&mut s.db.begin_read().await.unwrap(), &id).await.unwrap();
        let plan: domain::rerun_plan::RerunPlan = serde_json::from_str(&plan.unwrap().plan_json).unwrap();
        for step in &plan.on_key_alone {
            backend::services::key_alone::confirm(s, &self.staff, &id, step, "記録と内容を見比べた").await.unwrap();
        }
        self.confirm_five(false, &id).await;
        if outside_change {
            self.outside_changes(process_id, &plan.steps[0].name).await;
        }
        match rerun_requests::submit(s, &self.staff, &id).await {
            Ok(()) if !outside_change => Ok(Some(())),
            Err(AppError::Conflict { problem: Conflict::PlanChanged, .. }) if outside_change => Ok(Some(())),
            other => Err(format!("submit (outside change: {outside_change}): {other:?}")),
        }
    }
}

fn name(facts: [Fact; 2]) -> String {
    format!("{:?}-{:?}", facts[0], facts[1]).to_uppercase()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_requests_own_writes_never_void_its_plan_and_an_outside_change_always_does() {
    let lab = Lab::new().await;
    let combinations: Vec<[Fact; 2]> = ALL.iter().flat_map(|a| ALL.iter().map(move |b| [*a, *b])).collect();
    // A bulk rerun's members: stalled, their facts the outside systems' own.
    let bulk: Vec<[Fact; 2]> = combinations
        .iter()
        .copied()
        .filter(|f| {
            *f != [Fact::Flagged, Fact::Flagged] && STEPS.iter().zip(f).all(|((_, s), f)| outside_gives(*f, *s))
        })
        .collect();
    let mut operations = Vec::new();
    for facts in &combinations {
        for twin in ["S", "SX"] {
            operations.push((format!("{twin}-{}", name(*facts)), *facts));
        }
    }
    for facts in &bulk {
        for twin in ["B", "BX"] {
            operations.push((format!("{twin}-{}", name(*facts)), *facts));
        }
    }
    for (process_id, facts) in &operations {
        lab.operation(process_id, *facts).await;
    }
    lab.app.clock.advance(Duration::minutes(5)); // past the look-ups' consistency delay
    for (process_id, facts) in &operations {
        lab.late_work(process_id, *facts).await;
    }
    sweeper::sweep(&lab.app.state).await.unwrap();
    for (process_id, facts) in operations.iter().filter(|(p, _)| p.starts_with('S')) {
        lab.recorded_verdicts(process_id, *facts).await;
    }

    let mut failures = Vec::new();
    // Bulk first (its previews ask the outside systems again, before the clock moves on): every requested member of a batch submitted as requested; every member of its twin, whose outside
    // system did the work meanwhile, dropped.
    for (twin, outside_change) in [("B", false), ("BX", true)] {
        let ids: Vec<String> = bulk.iter().map(|f| format!("{twin}-{}", name(*f))).collect();
        let (requested, dropped) = lab.bulk(&ids, outside_change).await;
        if requested.is_empty() {
            failures.push(format!("{twin}: no member requested"));
        }
        let expected = if outside_change { requested.clone() } else { Vec::new() };
        if dropped != expected {
            failures.push(format!("{twin}: requested {requested:?}, dropped as changed {dropped:?}"));
        }
    }
    // One request at a time: submitted as made, or refused after an outside change.
    let mut submitted = 0;
    for facts in &combinations {
        for (twin, outside_change) in [("S", false), ("SX", true)] {
            match lab.single(&format!("{twin}-{}", name(*facts)), outside_change).await {
                Ok(Some(())) => submitted += 1,
                Ok(None) => {}
                Err(e) => failures.push(format!("{facts:?}: {e}")),
            }
        }
    }
    eprintln!(
        "own writes: {} single combinations, {} bulk, {submitted} single outcomes checked",
        combinations.len(),
        bulk.len()
    );
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
    assert!(submitted >= 10, "too few requests reached submission ({submitted}) to prove anything");
}

impl Lab {
    /// A bulk rerun of `ids`, previewed, requested, checked and submitted (after an outside change to each
    /// requested member when `outside_change`); the members requested, and those dropped as changed.
    async fn bulk(&self, ids: &[String], outside_change: bool) -> (Vec<String>, Vec<String>) {
        let s = &self.app.state;
        let selection = Selection { process_ids: ids.to_vec(), ..Selection::default() };
        let id = batches::create(s, &self.staff, selection, "障害で止まった分").await.unwrap();
        for _ in 0..2000 {
            if batches::view(s, &self.staff, &id).await.unwrap().status.as_str() != "previewing" {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        batches::request(s, &self.staff, &id, None).await.unwrap();
        let members = batches::view(s, &self.staff, &id).await.unwrap().members;
        let requested: Vec<String> =
            members.iter().filter(|m| m.state.as_str() == "requested").map(|m| m.process_id.clone()).collect();
        self.confirm_five(true, &id).await;
        if outside_change {
            for member in members.iter().filter(|m| m.state.as_str() == "requested") {
                self.outside_changes(&member.process_id, &member.steps[0].0).await;
            }
        }
        let submitted = batches::submit(s, &self.staff, &id).await;
        assert!(submitted.is_ok() || outside_change, "{submitted:?}");
        let members = batches::view(s, &self.staff, &id).await.unwrap().members;
        let dropped = members
            .iter()
            .filter(|m| m.state.as_str() == "dropped" && m.reasons.contains(&Reason::EvidenceChanged))
            .map(|m| m.process_id.clone())
            .collect();
        (requested, dropped)
    }
}
