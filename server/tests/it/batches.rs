//! Bulk reruns after an outage: the selection is frozen, each operation gets its own plan and the blocked ones
//! stay out; one checklist and one approval; dispatches go out at the batch's rate, each exactly once, with
//! pause, resume and cancel; an operation whose evidence changes drops out alone.
use crate::dispatch::Receiver;
use crate::fixtures::caller;
use crate::harness::TestApp;
use backend::demo::systems::Service;
use backend::services::{Caller, batches, dispatcher::dispatch_due, reconciliation, rerun_requests, sweeper};
use chrono::Duration;
use contract::batches::{BatchProgress, BatchView, Control, Selection};
use domain::batches::{Progress, Reason};
use domain::rerun_plan::BlockedBecause;
use reqwest::Method;
use serde_json::json;
use std::collections::BTreeSet;

pub(crate) struct Bulk {
    pub app: TestApp,
    pub token: String,
    receiver: Receiver,
    pub staff: Caller,
    pub owner: Caller,
}

pub(crate) async fn bulk() -> Bulk {
    bulk_with(|_| {}).await
}

/// The same, its configuration changed by `configure` first. Its workflows send a bulk rerun all at once unless
/// `configure` gives them stages (`stages.rs` tests those).
pub(crate) async fn bulk_with(configure: impl FnOnce(&mut backend::config::Config)) -> Bulk {
    let (receiver, url) = Receiver::start(&[]).await;
    let mut config = crate::harness::example_config();
    config.workflows.iter_mut().for_each(|w| w.canary = None);
    configure(&mut config);
    for w in &mut config.workflows {
        w.rerun_url = url.clone();
        w.rerun_allow_loopback = true;
    }
    config.bulk_dispatch_per_minute = 600;
    let app = TestApp::spawn_configured(|s| s.dispatch_timeout = std::time::Duration::from_secs(2), config).await;
    let token = app.token("intake", &["sales", "billing"]).await;
    app.user("sato", &["staff"], &["sales"]).await;
    app.user("suzuki", &["manager"], &["sales"]).await;
    let (staff, owner) = (caller(&app, "sato").await, caller(&app, "suzuki").await);
    Bulk { app, token, receiver, staff, owner }
}

pub(crate) fn ids(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{prefix}-{i:03}")).collect()
}

pub(crate) fn by_filter() -> Selection {
    Selection { department: Some("sales".into()), workflow: Some("order-intake".into()), ..Selection::default() }
}

impl Bulk {
    /// Order intakes whose first step failed with a 503 (an outage), stalled by the sweeper.
    pub(crate) async fn stalled(&self, process_ids: &[String], department: &str) {
        for chunk in process_ids.chunks(16) {
            futures::future::join_all(chunk.iter().map(|process_id| async move {
                let body = json!({"process_id": process_id, "workflow": "order-intake", "department": department,
                    "steps": [{"name": "register_order", "idempotency_key": format!("{process_id}-r")},
                              {"name": "ai_summary", "idempotency_key": format!("{process_id}-s")}]});
                self.app.api(Method::POST, "/api/v1/operations", &self.token, Some(process_id), Some(&body)).await;
                let failed = json!({"seq": 1, "type": "failed", "error": {"class": "server_error", "message": "503"}});
                let path = format!("/api/v1/operations/{process_id}/steps/register_order/events");
                self.app.api(Method::POST, &path, &self.token, None, Some(&failed)).await;
            }))
            .await;
        }
        self.app.clock.advance(Duration::minutes(5)); // past the look-ups' consistency delay
        sweeper::sweep(&self.app.state).await.unwrap();
    }

    /// The outside AI system starts working on the operation's summary: its look-up now says "in progress".
    async fn ai_starts(&self, process_id: &str) {
        self.app.demo_systems().execute(Service::Ai, &format!("{process_id}-s"), &json!({}), None).await.unwrap();
    }

    /// Creates the batch and waits for its look-ups to finish.
    pub(crate) async fn previewed(&self, selection: Selection) -> String {
        let id =
            batches::create(&self.app.state, &self.staff, selection, "決済サービスの障害で停止した分").await.unwrap();
        for _ in 0..1200 {
            if self.view(&id).await.status.as_str() != "previewing" {
                return id;
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        panic!("the preview did not finish within a minute");
    }

    pub(crate) async fn view(&self, id: &str) -> BatchView {
        batches::view(&self.app.state, &self.staff, id).await.unwrap()
    }

    /// What the page follows, checked against the whole view read just before (nothing moves in between).
    async fn follows_the_view(&self, view: &BatchView) {
        let followed = batches::progress(&self.app.state, &self.staff, &view.id).await.unwrap();
        assert_eq!(followed, BatchProgress::from(view), "the page's progress tells what the view tells");
    }

    /// Requested at `rate` a minute, the five checks confirmed, submitted and approved by the owner.
    pub(crate) async fn approved(&self, id: &str, rate: u32) {
        batches::request(&self.app.state, &self.staff, id, Some(rate)).await.unwrap();
        self.checked_and_submitted(id).await;
        batches::decide(&self.app.state, &self.owner, id, true, "").await.unwrap();
    }

    pub(crate) async fn checked_and_submitted(&self, id: &str) {
        for n in 1..=5 {
            let cause = rerun_requests::Cause {
                class: Some("outside_service_outage".into()),
                text: Some("決済 API の 503".into()),
            };
            batches::confirm(&self.app.state, &self.staff, id, n, "ログで確認した", cause).await.unwrap();
        }
        batches::submit(&self.app.state, &self.staff, id).await.unwrap();
    }

    /// The integration reports a step of a rerun operation.
    pub(crate) async fn report(&self, process_id: &str, step: &str, body: serde_json::Value) {
        let path = format!("/api/v1/operations/{process_id}/steps/{step}/events");
        let answer = self.app.api(Method::POST, &path, &self.token, None, Some(&body)).await;
        assert!(answer.status.is_success(), "{}", answer.body);
    }

    /// Lets `seconds` pass one second at a time, sending whatever is due.
    pub(crate) async fn dispatch_for(&self, seconds: i64) {
        for _ in 0..seconds {
            self.app.clock.advance(Duration::seconds(1));
            while dispatch_due(&self.app.state).await.unwrap() > 0 {}
        }
    }

    /// The process IDs the receiver got, one entry per request.
    pub(crate) fn sent(&self) -> Vec<String> {
        self.receiver
            .requests()
            .iter()
            .map(|(_, body)| {
                serde_json::from_slice::<serde_json::Value>(body).unwrap()["process_id"].as_str().unwrap().to_string()
            })
            .collect()
    }

    fn distinct_webhook_ids(&self) -> usize {
        self.receiver
            .requests()
            .iter()
            .map(|(h, _)| h["webhook-id"].to_str().unwrap().to_string())
            .collect::<BTreeSet<_>>()
            .len()
    }
}

fn progress(view: &BatchView, p: Progress) -> i64 {
    view.progress.iter().find(|(q, _)| *q == p).map_or(0, |(_, n)| *n)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_of_500_sends_only_the_eligible_operations_each_exactly_once() {
    let b = bulk().await;
    let all = ids("OUT", 500);
    b.stalled(&all, "sales").await;
    let busy: Vec<&String> = all.iter().step_by(10).collect(); // 50 whose AI summary is still being worked on
    for process_id in &busy {
        b.ai_starts(process_id).await;
    }

    let id = b.previewed(by_filter()).await;
    let preview = b.view(&id).await;
    assert_eq!(preview.status.as_str(), "preview");
    assert_eq!((preview.selected, preview.looked_up, preview.eligible, preview.blocked), (500, 500, 450, 50));
    assert!(b.receiver.requests().is_empty(), "the preview is a dry run: nothing is sent");
    assert_eq!(preview.totals.operations, 450);
    b.follows_the_view(&preview).await;
    assert_eq!(preview.totals.calls, vec![("ai-summary".to_string(), 450), ("order-api".to_string(), 450)]);
    let blocked = preview.members.iter().find(|m| m.process_id == *busy[3]).unwrap();
    assert_eq!(blocked.state.as_str(), "blocked");
    assert_eq!(
        blocked.reasons,
        vec![Reason::Blocked { step: "ai_summary".into(), why: BlockedBecause::StillInProgress }]
    );
    let eligible = preview.members.iter().find(|m| m.process_id == "OUT-001").unwrap();
    assert_eq!(
        eligible.steps,
        vec![("register_order".into(), "OUT-001-r".into()), ("ai_summary".into(), "OUT-001-s".into())]
    );

    b.approved(&id, 600).await;
    let approved = b.view(&id).await;
    assert_eq!(approved.status.as_str(), "dispatching");
    assert!(approved.checks.iter().all(|c| (c.passing, c.of) == (450, 450)), "450 of 450 pre-checks pass");
    b.follows_the_view(&approved).await;
    b.dispatch_for(50).await; // 450 at 600 a minute: 45 s

    let sent = b.sent();
    assert_eq!(sent.len(), 450, "each eligible operation once");
    assert_eq!(b.distinct_webhook_ids(), 450);
    let expected: BTreeSet<&String> = all.iter().filter(|p| !busy.contains(p)).collect();
    assert_eq!(sent.iter().collect::<BTreeSet<_>>(), expected, "the blocked ones were never sent");
    let done = b.view(&id).await;
    assert_eq!(done.status.as_str(), "sent", "all sent, none finished: not completed");
    assert_eq!(progress(&done, Progress::Sent), 450);
    assert_eq!(progress(&done, Progress::Waiting), 0);
    b.follows_the_view(&done).await;
    let actions = b.app.audit_actions().await;
    for action in [
        "rerun_batch.created",
        "rerun_batch.previewed",
        "rerun_batch.requested",
        "rerun_batch.submitted",
        "rerun_batch.approved",
        "rerun_batch.sent",
    ] {
        assert!(actions.iter().any(|a| a == action), "{action} is audited");
    }
    assert_eq!(actions.iter().filter(|a| *a == "rerun.dispatched").count(), 450, "each operation's part is audited");
    let bundle = backend::services::evidence::bundle(&b.app.state, &b.staff, "OUT-001").await.unwrap();
    let mut zip = zip::ZipArchive::new(std::io::Cursor::new(bundle.bytes)).unwrap();
    let mut requests = String::new();
    std::io::Read::read_to_string(&mut zip.by_name("OUT-001/rerun_requests.json").unwrap(), &mut requests).unwrap();
    let requests: serde_json::Value = serde_json::from_str(&requests).unwrap();
    assert_eq!(requests[0]["batch"]["batch"]["id"], id.as_str(), "the evidence bundle shows the batch it belonged to");
    assert_eq!(requests[0]["batch"]["decisions"][0]["decision"], "approved");
}

/// "✓ Completed" with none finished was a lie: a batch is sent once everything went out, completed only once
/// every member ended, and until then the page says what holds each one, with the error it met.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_is_completed_only_once_every_member_ended_and_shows_what_holds_the_rest() {
    let b = bulk().await;
    let all = ids("END", 3);
    b.stalled(&all, "sales").await;
    let id = b.previewed(by_filter()).await;
    b.approved(&id, 600).await;
    b.dispatch_for(2).await;
    assert_eq!(b.receiver.requests().len(), 3);
    // The first finishes; the second's order system refuses the rerun; the third says nothing yet.
    for step in ["register_order", "ai_summary"] {
        b.report("END-000", step, json!({"seq": 5, "type": "succeeded", "result_id": "x"})).await;
    }
    let refused =
        json!({"seq": 5, "type": "failed", "error": {"class": "auth_expired", "message": "401 Unauthorized"}});
    b.report("END-001", "register_order", refused).await;
    sweeper::sweep(&b.app.state).await.unwrap();
    let sent = b.view(&id).await;
    assert_eq!(sent.status.as_str(), "sent", "one member has not ended");
    let (s, f, w) =
        (progress(&sent, Progress::Succeeded), progress(&sent, Progress::Failed), progress(&sent, Progress::Sent));
    assert_eq!((s, f, w), (1, 1, 1));
    let failed = sent.members.iter().find(|m| m.process_id == "END-001").unwrap();
    assert_eq!(failed.held_by.as_deref(), Some("auth_expired: 401 Unauthorized"), "the error, on the page");
    b.follows_the_view(&sent).await;

    // The third says nothing within its step's deadline: its rerun stalled again, and the batch has ended.
    b.app.clock.advance(Duration::hours(1));
    sweeper::sweep(&b.app.state).await.unwrap();
    let ended = b.view(&id).await;
    assert_eq!(ended.status.as_str(), "completed");
    assert_eq!((progress(&ended, Progress::Succeeded), progress(&ended, Progress::Failed)), (1, 2));
    let silent = ended.members.iter().find(|m| m.process_id == "END-002").unwrap();
    assert_eq!(silent.held_by, None, "the 503 of before the rerun is not what holds it");
    assert!(b.app.audit_actions().await.iter().any(|a| a == "rerun_batch.completed"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pausing_stops_new_sends_and_resuming_continues_at_the_rate_without_duplicates() {
    let b = bulk().await;
    let all = ids("PAU", 40);
    b.stalled(&all, "sales").await;
    let id = b.previewed(by_filter()).await;
    b.approved(&id, 60).await; // one a second

    b.dispatch_for(10).await;
    let before_pause = b.sent().len();
    assert!((10..=12).contains(&before_pause), "about one a second: {before_pause} in 10 s");
    batches::control(&b.app.state, &b.staff, &id, Control::Pause, "受信側の負荷を確認する").await.unwrap();
    b.dispatch_for(30).await;
    assert_eq!(b.sent().len(), before_pause, "nothing is sent while paused");
    assert_eq!(b.view(&id).await.status.as_str(), "paused");

    batches::control(&b.app.state, &b.staff, &id, Control::Resume, "負荷は問題なし").await.unwrap();
    b.dispatch_for(5).await;
    let after_resume = b.sent().len() - before_pause;
    assert!(
        (5..=7).contains(&after_resume),
        "the rest is spread from the resume, not sent at once: {after_resume} in 5 s"
    );
    b.dispatch_for(40).await;
    assert_eq!(b.sent().len(), 40);
    assert_eq!(b.distinct_webhook_ids(), 40, "no operation was sent twice");
    assert_eq!(b.view(&id).await.status.as_str(), "sent", "all sent; none reported back yet");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_change_in_one_operations_evidence_removes_only_that_one() {
    let b = bulk().await;
    let all = ids("CHG", 12);
    b.stalled(&all, "sales").await;
    let id = b.previewed(by_filter()).await;
    batches::request(&b.app.state, &b.staff, &id, Some(60)).await.unwrap();
    b.checked_and_submitted(&id).await;

    // Before the approval: the outside system starts CHG-003's summary and a look-up records it.
    b.ai_starts("CHG-003").await;
    reconciliation::on_demand(&b.app.state, &b.staff, "CHG-003").await.unwrap();
    batches::decide(&b.app.state, &b.owner, &id, true, "").await.unwrap();
    // After the approval: CHG-007's summary starts; the look-up right before its send finds it.
    b.ai_starts("CHG-007").await;
    b.dispatch_for(20).await;

    let sent = b.sent();
    assert_eq!(sent.len(), 10);
    assert!(!sent.contains(&"CHG-003".to_string()) && !sent.contains(&"CHG-007".to_string()));
    let view = b.view(&id).await;
    assert_eq!(view.status.as_str(), "sent");
    for process_id in ["CHG-003", "CHG-007"] {
        let member = view.members.iter().find(|m| m.process_id == process_id).unwrap();
        assert_eq!(
            (member.state.as_str(), member.reasons.as_slice()),
            ("dropped", [Reason::EvidenceChanged].as_slice()),
            "{process_id}"
        );
    }
    let status =
        b.app.api(Method::GET, "/api/v1/operations/CHG-003", &b.token, None, None).await.json()["status"].clone();
    assert_eq!(status, "stalled", "a dropped operation is stalled again, for staff to look at");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_selection_is_one_departments_stalled_operations_and_bad_input_is_refused() {
    let b = bulk().await;
    b.stalled(&ids("SEL", 3), "sales").await;
    b.stalled(&ids("BIL", 2), "billing").await;
    let create = |selection: Selection| batches::create(&b.app.state, &b.staff, selection, "障害分");
    let field = |e: contract::AppError| match e {
        contract::AppError::Validation(errors) => errors[0].field.as_str(),
        other => panic!("expected a validation error, got {other:?}"),
    };
    let ticks =
        |ids: &[&str]| Selection { process_ids: ids.iter().map(|s| s.to_string()).collect(), ..Selection::default() };
    let unknown = create(ticks(&["SEL-000", "NOPE-1"])).await.unwrap_err();
    assert_eq!(
        app::ui::error_in(words::i18n::Locale::ja, &unknown),
        "次のプロセス ID のオペレーションは、あなたの部門に見つかりません: NOPE-1"
    );
    assert_eq!(field(unknown), "process_ids", "an unknown ID is named");
    assert_eq!(
        field(create(ticks(&["BIL-000"])).await.unwrap_err()),
        "process_ids",
        "another department's ID is unknown"
    );
    let nothing = Selection { event: Some("lost_response".into()), ..by_filter() };
    assert_eq!(field(create(nothing).await.unwrap_err()), "selection");
    assert_eq!(field(batches::create(&b.app.state, &b.staff, by_filter(), " ").await.unwrap_err()), "reason");

    // Ticked rows: exactly those, frozen as process IDs.
    let id = b.previewed(ticks(&["SEL-002", "SEL-000"])).await;
    let view = b.view(&id).await;
    assert_eq!(view.members.iter().map(|m| m.process_id.as_str()).collect::<Vec<_>>(), ["SEL-002", "SEL-000"]);
    let fast = batches::request(&b.app.state, &b.staff, &id, Some(601)).await.unwrap_err();
    assert_eq!(field(fast), "rate_per_minute", "never faster than configured");
    batches::request(&b.app.state, &b.staff, &id, None).await.unwrap();
    b.checked_and_submitted(&id).await;

    // One member's request cannot be decided on its own, and only an owner decides the batch.
    let rerun_id = b.view(&id).await.members[0].rerun_id.clone().unwrap();
    let approve = domain::approval::Decision::Approve;
    let alone = backend::services::approvals::decide(&b.app.state, &b.owner, &rerun_id, approve, "").await;
    assert!(
        matches!(alone, Err(contract::AppError::Conflict { ref problem, .. }) if *problem == contract::Conflict::PartOfBatch),
        "{alone:?}"
    );
    assert!(matches!(batches::decide(&b.app.state, &b.staff, &id, true, "").await, Err(contract::AppError::Forbidden)));

    // Cancelled before approval: every operation is stalled again and nothing is sent.
    batches::control(&b.app.state, &b.staff, &id, Control::Cancel, "別の手順で対応する").await.unwrap();
    assert_eq!(b.view(&id).await.status.as_str(), "cancelled");
    let status =
        b.app.api(Method::GET, "/api/v1/operations/SEL-002", &b.token, None, None).await.json()["status"].clone();
    assert_eq!(status, "stalled");
    b.dispatch_for(5).await;
    assert!(b.receiver.requests().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_owner_s_approval_of_a_bulk_rerun_stops_counting_once_an_admin_disables_him() {
    let b = bulk_with(|config| config.workflows.iter_mut().for_each(|w| w.approvals_required = 2)).await;
    b.stalled(&ids("ORD-VOID", 3), "sales").await;
    let id = b.previewed(by_filter()).await;
    batches::request(&b.app.state, &b.staff, &id, Some(60)).await.unwrap();
    b.checked_and_submitted(&id).await;
    let waiting = b.view(&id).await;
    let before = (progress(&waiting, Progress::AwaitingApproval), progress(&waiting, Progress::Waiting));
    assert_eq!(before, (3, 0), "nothing reads as queued to send before an approval exists");
    batches::decide(&b.app.state, &b.owner, &id, true, "").await.unwrap();
    b.app.user("admin", &["admin"], &[]).await;
    let admin = caller(&b.app, "admin").await;
    backend::services::users::set_disabled(&b.app.state, &admin, b.owner.user_id(), true).await.unwrap();

    assert!(b.view(&id).await.decisions[0].no_longer_counts, "the page says his approval no longer counts");
    b.app.user("kato", &["manager"], &["sales"]).await;
    batches::decide(&b.app.state, &caller(&b.app, "kato").await, &id, true, "").await.unwrap();
    assert_eq!(b.view(&id).await.status.as_str(), "pending_approval", "one approval that counts, of two");
    assert!(b.app.audit_actions().await.iter().any(|a| a == "rerun_batch.approval_voided"));
}
