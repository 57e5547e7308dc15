//! The offline check of an exported JSON Lines file. Any file: the check never panics, and a break names the
//! line it was found on. Any events (any text, any JSON in before/after) sealed into a chain and exported
//! whole: the check passes and calls the export complete; one row left out or changed is found.
#![no_main]
use domain::audit::{Actor, AuditEntry, AuditEvent};
use domain::audit_export::{AuditFilter, ExportChecker, ExportTrailer, jsonl_row, jsonl_trailer};
use arbitrary::Arbitrary;
use chrono::{DateTime, Utc};
use libfuzzer_sys::fuzz_target;
use serde_json::{Value, json};

#[derive(Arbitrary, Debug)]
struct Event<'a> {
    user: &'a str,
    object_id: &'a str,
    department: Option<&'a str>,
    /// JSON text (taken as a string value when it is not JSON), and a number beside it.
    after: Option<&'a str>,
    amount: f64,
    reason: Option<&'a str>,
    seconds: u32,
}

#[derive(Arbitrary, Debug)]
struct Input<'a> {
    file: &'a str,
    events: Vec<Event<'a>>,
    change_at: usize,
}

fn check<'a>(lines: impl IntoIterator<Item = &'a str>) -> Result<domain::audit_export::ExportSummary, (usize, String)> {
    let mut checker = ExportChecker::default();
    let mut read = 0;
    for line in lines {
        read += 1;
        if let Err(e) = checker.line(line) {
            assert_eq!(e.line, read, "a break names the line it was found on");
            return Err((e.line, e.problem));
        }
    }
    checker.finish().map_err(|e| {
        assert_eq!(e.line, read, "a break found at the end names the last line");
        (e.line, e.problem)
    })
}

fuzz_target!(|input: Input<'_>| {
    let _ = check(input.file.lines());

    if input.events.is_empty() {
        return;
    }
    let start = DateTime::<Utc>::from_timestamp(1_795_000_000, 0).unwrap();
    let mut events: Vec<AuditEvent> = Vec::new();
    for e in &input.events {
        let mut entry = AuditEntry::new(Actor::user(1, e.user), domain::audit_action::AuditAction::OperationRegistered, "operation", e.object_id)
            .department(e.department);
        if let Some(after) = e.after {
            let value = serde_json::from_str::<Value>(after).unwrap_or_else(|_| Value::String(after.to_string()));
            let amount = if e.amount.is_finite() { json!(e.amount) } else { Value::Null };
            entry = entry.after(json!({ "value": value, "amount": amount }));
        }
        if let Some(reason) = e.reason {
            entry = entry.reason(reason);
        }
        let prev = events.last().map(|p| (p.seq, p.hash.as_str()));
        events.push(entry.seal(prev, start + chrono::TimeDelta::seconds(i64::from(e.seconds))));
    }
    let last = events.last().unwrap();
    let trailer = ExportTrailer {
        rows: events.len() as u64,
        head_seq: last.seq,
        head_hash: last.hash.clone(),
        filter: AuditFilter::default(),
        exported_at: start,
    };
    let mut lines: Vec<String> = events.iter().map(jsonl_row).collect();
    lines.push(jsonl_trailer(&trailer));
    for line in &lines {
        assert!(!line.contains('\n'), "one row is one line");
    }
    let summary = check(lines.iter().map(String::as_str)).expect("a whole, untouched export checks out");
    assert!(summary.complete && summary.rows == events.len() as u64);

    // One row left out, or one row's object ID changed.
    let at = input.change_at % events.len();
    let mut dropped = lines.clone();
    dropped.remove(at);
    assert!(check(dropped.iter().map(String::as_str)).is_err(), "a missing row is found");
    let mut changed = lines;
    let mut row: Value = serde_json::from_str(&changed[at]).unwrap();
    row["object_id"] = Value::String(format!("{}x", events[at].object_id));
    changed[at] = row.to_string();
    assert_eq!(check(changed.iter().map(String::as_str)).unwrap_err().0, at + 1, "a changed row is found at its line");
});
