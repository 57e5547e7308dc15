//! Drills (rules in `domain::drills`): an admin injects faults into the practice outside systems (the demo's, which
//! ask before each call whether a drill in force has a fault for the operation calling: only the drill's own
//! practice operations meet one) for a period, on a database marked as a demo or drill environment only.
//! For each fault the demo integration runs one practice operation into it, through the step's connector
//! (`Connector::practise`), so that it stalls with the matching event for staff to work through; the report then reads
//! from the audit trail how long they took to decide and what they chose.
use super::Caller;
use super::api_clients::ApiClient;
use super::audit::record;
use crate::{AppState, db};
use chrono::{DateTime, Utc};
use contract::AppError;
use contract::drills::{DrillOverview, DrillReport, DrillView};
use contract::operations::{ReportedError, StepEvent};
use domain::audit::{AuditEntry, ObjectType};
use domain::audit_action::AuditAction;
use domain::conflict::Conflict;
use domain::drills::{Fault, ReportLine, decision_of, period};
use domain::holds::reason;
use domain::invalid::{Field, Invalid, Rule};
use domain::operations::StepEventType;
use domain::roles::Role;
use domain::stall::{ErrorClass, StallEvent};
use serde_json::{Value, json};
use words::i18n::Locale;

fn view(row: db::drills::DrillRow, now: DateTime<Utc>) -> DrillView {
    let active = row.ended_at.is_none() && row.ends_at > now;
    DrillView {
        faults: row.faults(),
        id: row.id,
        started_by: row.started_by,
        started_at: row.started_at,
        ends_at: row.ended_at.unwrap_or(row.ends_at),
        note: row.note,
        active,
    }
}

/// Marks the database as a demo (`make run`) or drill environment (`server database mark-drill`, on a copy
/// restored for practice): only then may drills run on it. Audited; marking twice changes nothing.
pub async fn mark_database(state: &AppState, actor: domain::audit::Actor, mark: &str) -> Result<(), AppError> {
    let now = state.clock.now();
    let mut tx = state.db.begin_write().await?;
    db::drills::mark(&mut tx, mark, now).await?;
    record(&mut tx, AuditEntry::new(actor, AuditAction::DatabaseMarked, ObjectType::Database, mark), None, now).await?;
    tx.commit().await?;
    Ok(())
}

/// Starts a drill: the faults are in force for `minutes`, and each fault's practice operation is run and stalls.
pub async fn start(
    state: &AppState,
    caller: &Caller,
    faults: &[Fault],
    minutes: i64,
    note: &str,
) -> Result<String, AppError> {
    caller.require(Role::Admin)?;
    let note = reason(note).map_err(|m| AppError::invalid(Field::Note, m))?;
    let length = period(minutes).map_err(|m| AppError::invalid(Field::Minutes, m))?;
    if faults.is_empty() {
        return Err(AppError::invalid(Field::Faults, Invalid::new(Rule::NoneChosen, "choose at least one fault")));
    }
    let now = state.clock.now();
    let id = format!("dr_{}", uuid::Uuid::now_v7().simple());
    let mut tx = state.db.begin_write().await?;
    if !db::drills::is_marked(&mut tx).await? {
        return Err(AppError::conflict(
            Conflict::NotADrillDatabase,
            "drills run only on a database marked as a demo or drill environment",
        ));
    }
    if !db::drills::active(&mut tx, now).await?.is_empty() {
        return Err(AppError::conflict(Conflict::DrillRunning, "another drill is running: end it first"));
    }
    let names: Vec<&str> = faults.iter().map(|f| f.as_str()).collect();
    db::drills::insert(&mut tx, &id, caller.user_id(), faults, &note, now, now + length).await?;
    let entry = AuditEntry::new(caller.actor(), AuditAction::DrillStarted, ObjectType::Drill, &id)
        .after(json!({"faults": names, "minutes": minutes, "ends_at": now + length}))
        .reason(&note);
    record(&mut tx, entry, caller.request_id.as_deref(), now).await?;
    tx.commit().await?;
    let client = demo_integration(state).await?;
    for fault in faults {
        practice(state, &client, &id, *fault).await?;
    }
    super::sweeper::sweep(state).await?;
    Ok(id)
}

/// Ends a drill's faults before its period is over.
pub async fn end(state: &AppState, caller: &Caller, id: &str) -> Result<(), AppError> {
    caller.require(Role::Admin)?;
    let now = state.clock.now();
    let mut tx = state.db.begin_write().await?;
    if !db::drills::end(&mut tx, id, now).await? {
        return Err(AppError::conflict(Conflict::DrillEnded, "the drill has ended already"));
    }
    record(
        &mut tx,
        AuditEntry::new(caller.actor(), AuditAction::DrillEnded, ObjectType::Drill, id),
        caller.request_id.as_deref(),
        now,
    )
    .await?;
    tx.commit().await?;
    Ok(())
}

async fn demo_integration(state: &AppState) -> Result<ApiClient, AppError> {
    let mut tx = state.db.begin_read().await?;
    let missing =
        || AppError::conflict(Conflict::NoDemoIntegration, "the demo integration is not loaded in this database");
    let row = db::api_clients::by_name(&mut tx, "demo-integration").await?.ok_or_else(missing)?;
    let departments = db::api_clients::department_codes(&mut tx, row.id).await?;
    Ok(ApiClient { id: row.id, name: row.name, departments, purpose: row.purpose })
}

/// What the demo integration does when it meets the fault: it registers the practice operation (marked with
/// the drill), runs its steps through the demo outside systems and reports what it saw, as it would.
async fn practice(state: &AppState, client: &ApiClient, drill: &str, fault: Fault) -> Result<(), AppError> {
    let workflow = state
        .config
        .workflow(fault.workflow())
        .ok_or_else(|| AppError::conflict(Conflict::WorkflowNotConfigured, "the demo workflows are not configured"))?;
    let process_id = format!("DRILL-{}-{}", &drill[drill.len() - 6..], fault.as_str());
    if fault.practice_operations() > 1 {
        return outage(state, client, (drill, fault), &process_id).await;
    }
    register_practice(state, client, (drill, fault), &process_id).await?;
    // The step the fault hits: the first one, or the one at the faulty system; the ones before it go through.
    let faulty = match fault {
        Fault::CredentialsExpired | Fault::AnswerLost => "register_order",
        Fault::LookupFindsNothing => "send_mail",
        _ => "ai_summary",
    };
    for step in &workflow.steps {
        let key = format!("{process_id}-{}", step.name);
        let report = |event: StepEvent| super::step_events::report(state, client, &process_id, &step.name, event);
        report(step_event(1, StepEventType::Started, None, None)).await?;
        let connector = state.connectors.of_step(&state.config, &workflow.name, &step.name);
        let done = match connector {
            Some(c) => c.connector.practise(&key, &process_id, fault).await.unwrap_or(Err(AppError::NotFound)),
            None => Err(AppError::NotFound),
        };
        if step.name != faulty {
            let id = done.ok();
            report(step_event(2, StepEventType::Succeeded, Some(id.as_deref().unwrap_or("local")), None)).await?;
            continue;
        }
        report(what_the_integration_saw(fault, &done)).await?;
        break; // the steps after the faulty one never started
    }
    Ok(())
}

/// Registers a practice operation marked with its drill and fault. A bulk rerun's practice operations carry their
/// content on their steps too, so that a rerun's record at the outside system is compared with it.
async fn register_practice(
    state: &AppState,
    client: &ApiClient,
    (drill, fault): (&str, Fault),
    process_id: &str,
) -> Result<(), AppError> {
    let workflow = state.config.workflow(fault.workflow()).ok_or(AppError::NotFound)?;
    let content = json!({"drill": drill, "amount": 1000});
    let steps: Vec<Value> = workflow
        .steps
        .iter()
        .map(|s| {
            let mut step = json!({"name": s.name, "idempotency_key": format!("{process_id}-{}", s.name)});
            if fault.practice_operations() > 1 {
                step["content"] = content.clone();
            }
            step
        })
        .collect();
    let body = json!({"process_id": process_id, "workflow": workflow.name, "department": workflow.department,
        "content": content, "steps": steps});
    super::registration::register_in_drill(state, client, process_id, &body, drill).await?;
    let mut tx = state.db.begin_write().await?;
    db::drills::insert_operation(&mut tx, drill, fault.as_str(), process_id).await?;
    tx.commit().await?;
    Ok(())
}

/// A bulk rerun's drill: a group of orders whose first step met the order system's outage (503), for staff to
/// rerun in bulk while the fault waits for the reruns.
async fn outage(
    state: &AppState,
    client: &ApiClient,
    (drill, fault): (&str, Fault),
    prefix: &str,
) -> Result<(), AppError> {
    for n in 1..=fault.practice_operations() {
        let process_id = format!("{prefix}-{n:02}");
        register_practice(state, client, (drill, fault), &process_id).await?;
        let report = |event| super::step_events::report(state, client, &process_id, "register_order", event);
        report(step_event(1, StepEventType::Started, None, None)).await?;
        let outage = (ErrorClass::ServerError, "503 Service Unavailable (the order system's outage)");
        report(step_event(2, StepEventType::Failed, None, Some(outage))).await?;
    }
    Ok(())
}

/// The faulty step's second report: what an integration meeting `fault` would say.
fn what_the_integration_saw(fault: Fault, done: &Result<String, AppError>) -> StepEvent {
    use ErrorClass as C;
    use StepEventType::{Failed, Unknown};
    let result = done.as_deref().ok();
    let (kind, result, error) = match (fault, done) {
        (_, Err(AppError::Unauthorized)) => {
            (Failed, None, Some((C::AuthExpired, "401 Unauthorized: the API credentials expired")))
        }
        (_, Err(AppError::TooManyRequests { .. })) => {
            (Failed, None, Some((C::RateLimited, "429 Too Many Requests (Retry-After: 60)")))
        }
        (Fault::AnswerLost, _) => {
            (Unknown, None, Some((C::NoResponse, "the connection closed before the answer came")))
        }
        (Fault::SlowAiJob, _) => (Unknown, result, Some((C::InProgress, "the background job is still generating"))),
        (Fault::CancelOnlyRequested, _) => {
            (Unknown, result, Some((C::CancelRequested, "a cancel was requested; whether it stopped is not known")))
        }
        (Fault::DuplicateWebhook, _) => {
            (Unknown, result, Some((C::DuplicateNotification, "the completion webhook arrived twice")))
        }
        (Fault::StaleWebhook, _) => {
            (Unknown, result, Some((C::StaleNotification, "an older completion webhook arrived after a newer one")))
        }
        // The mail went out, but no ID came back and the mail log finds nothing: no ID to look up.
        _ => (Unknown, None, None),
    };
    step_event(2, kind, result, error)
}

fn step_event(seq: i64, kind: StepEventType, result_id: Option<&str>, error: Option<(ErrorClass, &str)>) -> StepEvent {
    StepEvent {
        seq,
        kind,
        result_id: result_id.map(str::to_string),
        error: error.map(|(class, message)| ReportedError { class, message: message.to_string() }),
        at: None,
        usage: None,
    }
}

/// The drill page: whether drills are possible here, the one running, the past ones.
pub async fn overview(state: &AppState, caller: &Caller) -> Result<DrillOverview, AppError> {
    caller.require_any(&[Role::Admin, Role::Manager, Role::Auditor])?;
    let now = state.clock.now();
    let mut tx = state.db.begin_read().await?;
    Ok(DrillOverview {
        database_marked: db::drills::is_marked(&mut tx).await?,
        may_start: caller.user().has(Role::Admin),
        drills: db::drills::recent(&mut tx, 50).await?.into_iter().map(|d| view(d, now)).collect(),
    })
}

/// Per fault: the practice operation, its event, the time from its stall to the first decision a person took,
/// the decision and whether the table recommends it — read from the audit trail.
pub async fn report(state: &AppState, caller: &Caller, id: &str) -> Result<DrillReport, AppError> {
    caller.require_any(&[Role::Admin, Role::Manager, Role::Auditor])?;
    let now = state.clock.now();
    let mut tx = state.db.begin_read().await?;
    let drill = db::drills::by_id(&mut tx, id).await?.ok_or(AppError::NotFound)?;
    let mut lines = Vec::new();
    for (fault, process_id) in db::drills::operations(&mut tx, id).await? {
        let Some(fault) = Fault::parse(&fault) else { continue };
        let mut events = db::audit::for_object(&mut tx, "operation", &process_id, 1000).await?;
        events.reverse();
        let stall = events.iter().find(|e| e.action == AuditAction::OperationStalled.as_str());
        let event = stall
            .and_then(|e| e.after_json.as_deref())
            .and_then(|a| serde_json::from_str::<Value>(a).ok())
            .and_then(|a| a["event"].as_str().and_then(StallEvent::parse));
        let decided = stall.and_then(|s| {
            events
                .iter()
                .filter(|e| e.seq > s.seq && e.actor_kind == "user")
                .find_map(|e| decision_of(&e.action).map(|d| (d, e)))
        });
        lines.push(ReportLine {
            fault,
            process_id,
            expected_event: fault.event(),
            event,
            stalled_at: stall.map(|s| s.at),
            decision: decided.map(|(d, _)| d),
            decided_at: decided.map(|(_, e)| e.at),
            decided_by: decided.map(|(_, e)| e.actor_label.clone()),
        });
    }
    Ok(DrillReport { drill: view(drill, now), lines })
}

/// The report as CSV (cells neutralised against formula injection), for the team's follow-up.
/// `headings`: the heading row's language (`None`: the columns' codes).
pub async fn report_csv(
    state: &AppState,
    caller: &Caller,
    id: &str,
    headings: Option<Locale>,
) -> Result<Vec<u8>, AppError> {
    let report = report(state, caller, id).await?;
    let mut out = Vec::new();
    let header = words::columns::header_in(headings, &domain::drills::REPORT_CSV_COLUMNS);
    domain::audit_export::write_csv_record(&mut out, &header.iter().map(|h| Some(h.as_str())).collect::<Vec<_>>());
    // Events and decisions in the reader's words when the headings are (people), else as codes (tools).
    let event = |e: StallEvent| headings.map_or(e.as_str(), |l| words::event_label_in(l, e.as_str())).to_string();
    let decision = |d: domain::decision_table::Action| match headings {
        Some(l) => words::decision_table::action_label(l, d).to_string(),
        None => serde_json::to_value(d).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default(),
    };
    for line in &report.lines {
        let text = |v: Option<String>| v.unwrap_or_default();
        let cells = [
            line.fault.as_str().to_string(),
            line.process_id.clone(),
            event(line.expected_event),
            text(line.event.map(event)),
            text(line.stalled_at.map(|t| t.to_rfc3339())),
            text(line.decision.map(decision)),
            text(line.decided_by.clone()),
            text(line.decided_at.map(|t| t.to_rfc3339())),
            text(line.seconds_to_decide().map(|s| s.to_string())),
            text(line.matches().map(|m| m.to_string())),
        ];
        let cells: Vec<Option<&str>> = cells.iter().map(|c| Some(c.as_str())).collect();
        domain::audit_export::write_csv_record(&mut out, &cells);
    }
    let mut tx = state.db.begin_write().await?;
    let entry = AuditEntry::new(caller.actor(), AuditAction::DrillReportExported, ObjectType::Drill, id);
    record(&mut tx, entry, caller.request_id.as_deref(), state.clock.now()).await?;
    tx.commit().await?;
    Ok(out)
}
