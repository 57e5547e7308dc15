//! The README's five-minute walkthrough, step for step as written there (steps 1–5; its step 6 is the story of
//! the outage's bulk rerun and its step 7 the drill's, in `seed`).
use crate::demo::{Ai, Demo, in_order, once};
use reqwest::StatusCode;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_readmes_walkthrough_reruns_ord_1002s_summary_and_the_auditor_proves_it() {
    let demo = Demo::start("the README's walkthrough (ORD-1002)").await;
    // 1. sato signs in; English, then 日本語 again; the account's time zone.
    let sato = demo.signs_in("sato").await;
    sato.calls("switch_language", &[("language", "en")]).await;
    assert_eq!(sato.calls("me", &[]).await["language"], "en");
    sato.calls("switch_language", &[("language", "ja")]).await;
    sato.calls("save_preferences", &[("language", "ja"), ("time_zone", "Asia/Tokyo")]).await;

    // 2. The board lists the stalled operations with their event; ORD-1002, the partial success: the order's
    //    flag set and executed, the summary without a flag and not executed. Asking again is in the timeline.
    let board = sato.board().await;
    let row = board.iter().find(|r| r["process_id"] == "ORD-1002").expect("ORD-1002 on the board");
    assert_eq!(row["event"], "partial_success");
    let detail = sato.calls("board/operation", &[("process_id", "ORD-1002")]).await;
    let steps = detail["operation"]["steps"].as_array().unwrap();
    assert!(!steps[0]["completed_at"].is_null() && steps[0]["latest_verdict"] == "executed", "{}", steps[0]);
    assert!(steps[1]["completed_at"].is_null() && steps[1]["latest_verdict"] == "not_executed", "{}", steps[1]);
    let timeline = detail["timeline"].as_array().unwrap().len();
    sato.calls("board/reconcile", &[("process_id", "ORD-1002")]).await;
    let detail = sato.calls("board/operation", &[("process_id", "ORD-1002")]).await;
    assert!(detail["timeline"].as_array().unwrap().len() > timeline, "the new look-up is in the timeline");

    // 3. A reason, the plan: the summary only, with its original key; the five checks; 承認を依頼する.
    let id = sato.starts_a_rerun_request("ORD-1002", "要約が始まっていないため").await;
    let request = sato.calls("reruns/load", &[("id", &id)]).await;
    assert_eq!(
        request["plan"]["steps"],
        json!([{"name": "ai_summary", "idempotency_key": "ORD-1002-ai_summary",
        "content_fingerprint": request["plan"]["steps"][0]["content_fingerprint"]}])
    );
    sato.confirms_the_five_checks("reruns", &id).await;
    sato.calls("reruns/submit", &[("id", &id)]).await;

    // 4. sato could not approve her own request; suzuki approves it; the demo integration runs the summary with
    //    the same key and reports back: ORD-1002 ends 完了.
    let own = sato.tries("approvals/decide", &[("id", &id), ("approve", "true"), ("comment", "")]).await;
    assert_ne!(own.status, StatusCode::OK, "a maker never approves: {}", own.body);
    let suzuki = demo.signs_in("suzuki").await;
    suzuki.approves(&id).await;
    assert_eq!(demo.dispatcher_runs().await, 1);
    demo.operation_becomes("ORD-1002", "completed").await;
    assert_eq!(once(demo.outside(Ai, "ORD-1002-ai_summary").await, "the summary").replays, 0);

    // 5. tanaka: the audit trail filtered by ORD-1002, both exports, the evidence ZIP proven by the guide's
    //    script; INV-2001 shows why an unknown result blocks a rerun (ito releases its hold and tries).
    let tanaka = demo.signs_in("tanaka").await;
    let filter = json!({"from": "", "to": "", "department": "", "actor": "", "action": "", "object_type": "",
        "object_id": "", "process_id": "ORD-1002"});
    let page = tanaka.calls_json("audit/page", json!({"filter": filter})).await;
    assert!(page["rows"].as_array().unwrap().len() >= 8 && page["chain"].get("Broken").is_none(), "{page}");
    let csv = String::from_utf8(tanaka.downloads("/audit/export?format=csv&process_id=ORD-1002").await).unwrap();
    assert!(csv.contains("rerun_request.approved"), "{csv}");
    let proven = tanaka.verifies_the_trail_and_the_evidence_of("ORD-1002").await;
    in_order(&proven, &["rerun_request.created", "rerun_request.submitted", "rerun_request.approved"]);
    in_order(&proven, &["rerun.dispatched", "operation.completed"]);

    let ito = demo.signs_in("ito").await;
    ito.calls("board/release", &[("process_id", "INV-2001"), ("reason", "試しに解除する")]).await;
    let tried = ito.calls("reruns/start", &[("process_id", "INV-2001"), ("reason", "試す")]).await;
    let reasons = &tried["Blocked"]["reasons"];
    assert_eq!(reasons[0]["step"], "send_mail", "{tried}");
    assert_eq!(reasons[0]["why"], "result_unknown", "{tried}");
    demo.ends();
}
