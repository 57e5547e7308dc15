//! What a batch writes together (the dispatcher's outcomes, a bulk preview's look-ups) reads back as if each had
//! been written alone, however many statements the batch is cut into.
use crate::fixtures::stalled;
use crate::harness::TestApp;
use backend::Clock;
use backend::db::reconciliations::{NewReconciliation, insert_all};
use backend::services::audit::{Verification, record_all, verify};
use domain::audit::{Actor, AuditEntry, ObjectType, SystemActor};
use domain::audit_action::AuditAction;
use domain::reconciliation::Verdict;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_recorded_together_chain_one_after_another_across_the_statements_they_are_cut_into() {
    let app = TestApp::spawn().await;
    let mut tx = app.db().begin_write().await.unwrap();
    let (head, _) = backend::db::audit::head(&mut tx).await.unwrap();
    let at = app.clock.now();
    // 250 events: three multi-row statements after the first event, each at its own moment.
    let entries = (0..250)
        .map(|i| {
            let entry = AuditEntry::new(
                Actor::system(SystemActor::Dispatcher),
                AuditAction::StepReconciled,
                ObjectType::Operation,
                format!("BATCH-{i}"),
            );
            (entry, at + chrono::Duration::milliseconds(i))
        })
        .collect();
    let events = record_all(&mut tx, entries, Some("req-batch")).await.unwrap();
    tx.commit().await.unwrap();
    let seqs: Vec<i64> = events.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, ((head + 1)..=(head + 250)).collect::<Vec<_>>());
    assert!(events.windows(2).all(|pair| pair[1].prev_hash == pair[0].hash), "each event follows the one before");
    assert!(events.iter().enumerate().all(|(i, e)| e.at == at + chrono::Duration::milliseconds(i as i64)));
    assert!(events.iter().all(|e| e.request_id.as_deref() == Some("req-batch")));
    assert!(
        matches!(verify(app.db()).await.unwrap(), Verification::Intact { events } if events == head + 250),
        "the stored trail verifies from its first event to its last"
    );
    // The next append, alone, follows the batch's last event.
    let mut tx = app.db().begin_write().await.unwrap();
    let entry = AuditEntry::new(
        Actor::system(SystemActor::Dispatcher),
        AuditAction::StepReconciled,
        ObjectType::Operation,
        "AFTER",
    );
    let next = backend::services::audit::record(&mut tx, entry, None, at).await.unwrap();
    tx.commit().await.unwrap();
    assert_eq!((next.seq, next.prev_hash.as_str()), (head + 251, events[249].hash.as_str()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn look_ups_recorded_together_leave_each_step_its_last_verdict_and_move_its_revision_once_each() {
    let app = TestApp::spawn().await;
    let token = app.token("batch-looks", &["sales"]).await;
    let mut steps = Vec::new();
    for i in 0..30 {
        let process_id = format!("LOOKS-{i}");
        stalled(&app, &token, &process_id).await;
        let mut conn = app.db().connection().await.unwrap();
        let operation = backend::db::operations::by_process_id(&mut conn, &process_id).await.unwrap().unwrap();
        steps.extend(backend::db::operations::steps(&mut conn, operation.id).await.unwrap());
    }
    assert_eq!(steps.len(), 60);
    // 60 steps looked up, the first ten twice (not executed, then executed): 70 look-ups, two statements' worth.
    let at = app.clock.now();
    let new = |step_id, verdict| NewReconciliation {
        step_id,
        connector: "demo",
        verdict,
        external_id: None,
        evidence_json: "{}",
        asked_by: "system:test",
        recorded_by: None,
        records: 0,
    };
    let mut looks: Vec<_> = steps.iter().map(|s| (new(s.id, Verdict::NotExecuted.as_str()), at)).collect();
    looks.extend(steps.iter().take(10).map(|s| (new(s.id, Verdict::Executed.as_str()), at)));
    let mut tx = app.db().begin_write().await.unwrap();
    insert_all(&mut tx, &looks).await.unwrap();
    tx.commit().await.unwrap();
    let mut conn = app.db().connection().await.unwrap();
    for (i, before) in steps.iter().enumerate() {
        let operation_steps = backend::db::operations::steps(&mut conn, before.operation_id).await.unwrap();
        let after = operation_steps.iter().find(|s| s.id == before.id).unwrap();
        let (verdict, looked) = if i < 10 { (Verdict::Executed, 2) } else { (Verdict::NotExecuted, 1) };
        assert_eq!(after.latest_verdict, Some(verdict), "step {i}");
        assert_eq!(after.revision, before.revision + looked, "step {i}");
    }
}
