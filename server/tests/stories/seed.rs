//! The seed's cases (README, "Demo sign-in"), each played to its end by the people of the demo.
use crate::demo::{Ai, Billing, Demo, Mail, Orders, in_order, once};
use serde_json::{Value, json};

fn step<'a>(operation: &'a Value, name: &str) -> &'a Value {
    let steps = operation["steps"].as_array().unwrap();
    steps.iter().find(|s| s["name"] == name).unwrap_or_else(|| panic!("no step {name} in {operation}"))
}

/// The events every story of one request leaves on its operation, in order.
const ONE_REQUEST: [&str; 8] = [
    "rerun_request.created",
    "rerun_request.check_confirmed",
    "rerun_request.submitted",
    "rerun_request.approved",
    "rerun.dispatched",
    "step.succeeded",
    "operation.completed",
    "rerun_request.succeeded",
];

/// ORD-1001: the order system's answer was lost. The order is there (4,000 yen, as sent), the summary never
/// started: the start confirms the order's flag, the plan is the summary alone, and that plan — bound after the
/// start's own write — is submitted, approved and sent once with the summary's original key.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ord_1001_the_answer_lost_is_rerun_for_its_summary_alone_and_completes() {
    let demo = Demo::start("ORD-1001, the answer lost").await;
    let sato = demo.signs_in("sato").await;
    let board = sato.board().await;
    let row = board.iter().find(|r| r["process_id"] == "ORD-1001").expect("ORD-1001 is on sato's board");
    assert_eq!(row["event"], "no_response");
    let before = demo.operation("ORD-1001").await;
    assert_eq!(step(&before, "register_order")["latest_verdict"], "executed", "the order is there");
    assert!(step(&before, "register_order")["completed_at"].is_null(), "its flag not set yet");
    assert_eq!(step(&before, "ai_summary")["latest_verdict"], "not_executed");

    let id = sato.starts_a_rerun_request("ORD-1001", "受注は登録済み。要約だけを再実行する").await;
    let request = sato.calls("reruns/load", &[("id", &id)]).await;
    let planned: Vec<&Value> = request["plan"]["steps"].as_array().unwrap().iter().collect();
    assert_eq!(planned.len(), 1, "the summary alone: {planned:?}");
    assert_eq!(
        (&planned[0]["name"], &planned[0]["idempotency_key"]),
        (&json!("ai_summary"), &json!("ORD-1001-ai_summary"))
    );
    assert!(!step(&demo.operation("ORD-1001").await, "register_order")["completed_at"].is_null(), "flag confirmed");
    sato.confirms_the_five_checks("reruns", &id).await;
    sato.calls("reruns/submit", &[("id", &id)]).await;

    let suzuki = demo.signs_in("suzuki").await;
    suzuki.approves(&id).await;
    assert_eq!(demo.dispatcher_runs().await, 1);
    demo.operation_becomes("ORD-1001", "completed").await;

    assert_eq!(demo.reruns_received().await, 1, "one rerun received");
    let summary = once(demo.outside(Ai, "ORD-1001-ai_summary").await, "the summary");
    assert_eq!(summary.replays, 0, "summarised once, under its original key");
    let order = once(demo.outside(Orders, "ORD-1001-register_order").await, "the order");
    assert_eq!((order.replays, order.conflicts), (1, 1), "the seed's retry and its refused change, nothing since");
    assert_eq!(order.content["amount"], 4000, "the order stays as it was: no second order");
    let tanaka = demo.signs_in("tanaka").await;
    let proven = tanaka.verifies_the_trail_and_the_evidence_of("ORD-1001").await;
    in_order(&proven, &["step.flag_confirmed"]);
    in_order(&proven, &ONE_REQUEST);
    demo.ends();
}

/// INV-2001: the invoice mail got no ID back and the mail log found nothing, which proves nothing: billing held
/// it and asked the provider. The provider's log then shows the mail sent with the invoice's content; ito asks
/// again, releases the hold and requests the rerun of the invoice's issue alone, which takahashi approves.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inv_2001_held_until_the_mail_log_shows_the_mail_then_only_the_invoice_is_issued() {
    let demo = Demo::start("INV-2001, the mail not found").await;
    let ito = demo.signs_in("ito").await;
    let held = demo.operation("INV-2001").await;
    assert_eq!(held["status"], "on_hold");
    assert_eq!(step(&held, "send_mail")["latest_verdict"], "unknown", "not found proves nothing at the mail provider");

    let invoice = json!({"customer": "株式会社サンプル", "amount": 132000});
    demo.app.demo_systems().execute(Mail, "INV-2001-send_mail", &invoice, Some("INV-2001")).await.unwrap();
    demo.sweeper_runs_after(60).await;
    ito.calls("board/reconcile", &[("process_id", "INV-2001")]).await;
    assert_eq!(step(&demo.operation("INV-2001").await, "send_mail")["latest_verdict"], "executed");
    ito.calls("board/release", &[("process_id", "INV-2001"), ("reason", "配信事業者のログで送信済みを確認した")]).await;

    let id = ito.starts_a_rerun_request("INV-2001", "メールは送信済み。請求書の発行だけを再実行する").await;
    let request = ito.calls("reruns/load", &[("id", &id)]).await;
    let planned: Vec<&str> =
        request["plan"]["steps"].as_array().unwrap().iter().map(|s| s["name"].as_str().unwrap()).collect();
    assert_eq!(planned, ["issue_invoice"], "the mail is not sent twice");
    ito.confirms_the_five_checks("reruns", &id).await;
    ito.calls("reruns/submit", &[("id", &id)]).await;
    let takahashi = demo.signs_in("takahashi").await;
    takahashi.approves(&id).await;
    assert_eq!(demo.dispatcher_runs().await, 1);
    demo.operation_becomes("INV-2001", "completed").await;

    let mail = once(demo.outside(Mail, "INV-2001-send_mail").await, "the mail");
    assert_eq!(mail.replays, 0, "one mail");
    let issued = once(demo.outside(Billing, "INV-2001-issue_invoice").await, "the invoice");
    assert_eq!((issued.replays, &issued.content["amount"]), (0, &json!(132000)), "one invoice, as registered");
    let tanaka = demo.signs_in("tanaka").await;
    let proven = tanaka.verifies_the_trail_and_the_evidence_of("INV-2001").await;
    in_order(&proven, &["operation.held", "operation.released", "step.flag_confirmed"]);
    in_order(&proven, &ONE_REQUEST);
    demo.ends();
}

/// ORD-1101–ORD-1106: six orders lost to the order system's outage. sato selects them by event and workflow; the
/// preview leaves ORD-1107 out (the order system holds it with another amount); the six go in one bulk rerun that
/// suzuki approves; a canary of three first, the rest once the outside systems proved the canary done.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_outage_orders_are_rerun_in_one_bulk_rerun_in_stages_and_each_completes_once() {
    let demo = Demo::start("ORD-1101–1106, a bulk rerun in stages").await;
    let sato = demo.signs_in("sato").await;
    let form = [("workflow", "order-intake"), ("event", "temporary_failure"), ("reason", "受注システム障害の分")];
    let id: String = serde_json::from_value(sato.calls("batches/create", &form).await).unwrap();
    let batch = demo.batch_previewed(&sato, &id).await;
    let left_out: Vec<&str> = batch["members"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["state"] == "blocked")
        .map(|m| m["process_id"].as_str().unwrap())
        .collect();
    assert_eq!(left_out, ["ORD-1107"], "another amount at the order system: never rerun");
    sato.calls("batches/request", &[("id", &id), ("rate_per_minute", "")]).await;
    sato.confirms_the_five_checks("batches", &id).await;
    sato.calls("batches/submit", &[("id", &id)]).await;
    let suzuki = demo.signs_in("suzuki").await;
    suzuki.calls("batches/decide", &[("id", &id), ("approve", "true"), ("comment", "確認しました")]).await;

    let orders: Vec<String> = (1101..=1106).map(|n| format!("ORD-{n}")).collect();
    let canary = demo.bulk_runs_its_stages(&suzuki, &id, &orders).await;
    assert_eq!(canary, 3, "a canary of three went first, alone");
    assert_eq!(demo.reruns_received().await, 6);
    for process_id in &orders {
        let order = once(demo.outside(Orders, &format!("{process_id}-register_order")).await, process_id);
        assert_eq!(order.replays, 0, "{process_id}: one order");
    }
    assert_eq!(demo.operation("ORD-1107").await["status"], "stalled", "ORD-1107 waits for a person");
    let tanaka = demo.signs_in("tanaka").await;
    let proven = tanaka.verifies_the_trail_and_the_evidence_of("ORD-1104").await;
    in_order(&proven, &["rerun_request.created", "rerun_request.submitted", "rerun.dispatched", "operation.completed"]);
    demo.ends();
}

/// A drill: the admin injects a lost answer; staff decide the practice operation as they would a real one,
/// and play it to the end; the drill's report says how long they took and that the table agrees.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_drills_lost_answer_is_played_to_the_end_and_the_report_agrees_with_the_table() {
    let demo = Demo::start("a drill: the answer lost").await;
    let admin = demo.signs_in("admin").await;
    let form = [("faults", "answer_lost"), ("minutes", "30"), ("note", "応答喪失の朝")];
    let drill: String = serde_json::from_value(admin.calls("drills/start", &form).await).unwrap();
    let report = admin.calls("drills/report", &[("id", &drill)]).await;
    let practice = report["lines"][0]["process_id"].as_str().unwrap().to_string();
    demo.sweeper_runs_after(90).await;

    let sato = demo.signs_in("sato").await;
    assert!(sato.board().await.iter().any(|r| r["process_id"] == practice.as_str()), "on the board");
    let id = sato.starts_a_rerun_request(&practice, "訓練: 受注は登録済み、要約だけ").await;
    let request = sato.calls("reruns/load", &[("id", &id)]).await;
    assert_eq!(request["plan"]["on_key_alone"], json!(["register_order"]), "found by its key alone: {request}");
    let look = [("id", id.as_str()), ("step", "register_order"), ("comment", "受注の記録と内容を見比べた")];
    sato.calls("reruns/confirm_key_alone", &look).await;
    sato.confirms_the_five_checks("reruns", &id).await;
    sato.calls("reruns/submit", &[("id", &id)]).await;
    let suzuki = demo.signs_in("suzuki").await;
    suzuki.approves(&id).await;
    assert_eq!(demo.dispatcher_runs().await, 1);
    demo.operation_becomes(&practice, "completed").await;

    let report = admin.calls("drills/report", &[("id", &drill)]).await;
    let line = &report["lines"][0];
    assert_eq!(line["decision"], "request_rerun", "{line}");
    let lines: Vec<domain::drills::ReportLine> = serde_json::from_value(report["lines"].clone()).unwrap();
    assert!(lines[0].seconds_to_decide().is_some_and(|s| s >= 90), "{:?}", lines[0]);
    demo.ends();
}

/// ORD-1001 again, but the summary ran meanwhile (someone's retry reached the AI service after the plan was
/// made): the submission is refused, the request's page names what changed — the summary's verdict, before and
/// after — and one press makes the plan again, which finds nothing left to rerun: ORD-1001 completes with no
/// rerun sent at all.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ord_1001_whose_summary_ran_meanwhile_is_refused_names_the_change_and_is_planned_again_to_nothing() {
    let demo = Demo::start("ORD-1001, the summary ran meanwhile").await;
    let sato = demo.signs_in("sato").await;
    let id = sato.starts_a_rerun_request("ORD-1001", "受注は登録済み。要約だけを再実行する").await;
    sato.confirms_the_five_checks("reruns", &id).await;

    let order = json!({"item": "オフィスチェア", "amount": 4000});
    demo.app.demo_systems().execute(Ai, "ORD-1001-ai_summary", &order, Some("ORD-1001")).await.unwrap();
    demo.sweeper_runs_after(30).await; // the AI's job done
    sato.calls("board/reconcile", &[("process_id", "ORD-1001")]).await;
    let refused = sato.tries("reruns/submit", &[("id", &id)]).await;
    assert_eq!(refused.status, reqwest::StatusCode::CONFLICT, "{}", refused.body);
    assert!(refused.body.contains("plan-changed"), "{}", refused.body);
    let request = sato.calls("reruns/load", &[("id", &id)]).await;
    assert_eq!(request["plan_changes"], json!([{"kind": "verdict", "step": "ai_summary", "now": "executed"}]));

    let again = sato.calls("reruns/replan", &[("id", &id)]).await;
    assert_eq!(again, json!({"NothingToRerun": {"confirmed": ["ai_summary"]}}));
    assert_eq!(demo.operation("ORD-1001").await["status"], "completed");
    assert_eq!(demo.dispatcher_runs().await, 0, "nothing to send");
    assert_eq!(demo.reruns_received().await, 0);
    let tanaka = demo.signs_in("tanaka").await;
    let proven = tanaka.verifies_the_trail_and_the_evidence_of("ORD-1001").await;
    in_order(
        &proven,
        &["rerun_request.created", "rerun_request.cancelled", "step.flag_confirmed", "operation.completed"],
    );
    demo.ends();
}

/// Not a seed case, but the seed's first story many times over: four orders whose registration answer was lost
/// (the order system holds each, the integration reported "unknown") go in one bulk rerun. Every member reaches
/// approval — none is dropped because its own start set the order's flag — and all complete in stages, each
/// summary sent once with its original key and no order twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bulk_rerun_of_lost_answers_reaches_approval_with_every_member_and_completes_in_stages() {
    let demo = Demo::start("a bulk rerun of lost answers").await;
    let token = demo.app.token("order-intake", &["sales"]).await;
    let orders: Vec<String> = (1..=4).map(|n| format!("LOST-{n}")).collect();
    for process_id in &orders {
        let content = json!({"item": "昇降デスク", "amount": 52000});
        let steps: Vec<Value> = ["register_order", "ai_summary"]
            .iter()
            .map(|s| json!({"name": s, "idempotency_key": format!("{process_id}-{s}"), "content": content}))
            .collect();
        let body = json!({"process_id": process_id, "workflow": "order-intake", "department": "sales",
            "content": content, "steps": steps});
        demo.app.api(reqwest::Method::POST, "/api/v1/operations", &token, Some(process_id), Some(&body)).await;
        let key = format!("{process_id}-register_order");
        demo.app.demo_systems().execute(Orders, &key, &content, Some(process_id)).await.unwrap();
        let lost = json!({"seq": 1, "type": "unknown", "error": {"class": "no_response", "message": "応答なし"}});
        let path = format!("/api/v1/operations/{process_id}/steps/register_order/events");
        demo.app.api(reqwest::Method::POST, &path, &token, None, Some(&lost)).await;
    }
    demo.sweeper_runs_after(60).await;

    let sato = demo.signs_in("sato").await;
    let ticked = orders.join(",");
    let form = [("process_ids", ticked.as_str()), ("reason", "受注システムの応答が失われた分")];
    let id: String = serde_json::from_value(sato.calls("batches/create", &form).await).unwrap();
    let previewed = demo.batch_previewed(&sato, &id).await;
    assert_eq!(previewed["eligible"], 4, "{previewed}");
    sato.calls("batches/request", &[("id", &id), ("rate_per_minute", "")]).await;
    sato.confirms_the_five_checks("batches", &id).await;
    sato.calls("batches/submit", &[("id", &id)]).await;
    let submitted = sato.calls("batches/load", &[("id", &id)]).await;
    assert_eq!((&submitted["status"], &submitted["dropped"]), (&json!("pending_approval"), &json!(0)), "{submitted}");

    let suzuki = demo.signs_in("suzuki").await;
    suzuki.calls("batches/decide", &[("id", &id), ("approve", "true"), ("comment", "確認しました")]).await;
    assert_eq!(demo.bulk_runs_its_stages(&suzuki, &id, &orders).await, 3, "a canary of three first");
    for process_id in &orders {
        let order = once(demo.outside(Orders, &format!("{process_id}-register_order")).await, process_id);
        assert_eq!(order.replays, 0, "{process_id}: one order");
        let summary = once(demo.outside(Ai, &format!("{process_id}-ai_summary")).await, process_id);
        assert_eq!(summary.replays, 0, "{process_id}: one summary");
    }
    demo.ends();
}
