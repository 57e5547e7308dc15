//! The auditors' side: the filtered page, the chain status, streamed exports and their offline check.
use crate::fixtures::{caller, pending_request};
use crate::harness::{PASSWORD, TestApp};
use backend::services::approvals::decide;
use backend::services::audit_trail::{self, ChainStatus};
use domain::approval::Decision;
use domain::audit_export::AuditFilter;
use reqwest::StatusCode;

pub async fn download(
    app: &TestApp,
    query: &str,
    cookie: Option<&str>,
) -> (StatusCode, reqwest::header::HeaderMap, String) {
    let mut request = app.http.get(format!("{}/audit/export?{query}", app.url));
    if let Some(cookie) = cookie {
        request = request.header("cookie", cookie);
    }
    let answer = request.send().await.unwrap();
    (answer.status(), answer.headers().clone(), answer.text().await.unwrap())
}

fn verify_file(contents: &str) -> (Option<i32>, String) {
    let path = std::env::temp_dir().join(format!("export-{}.jsonl", uuid::Uuid::new_v4().simple()));
    std::fs::write(&path, contents).unwrap();
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_server"))
        .args(["audit", "verify", "--file", path.to_str().unwrap()])
        .args(["--public-key", crate::harness::public_key_file().to_str().unwrap()])
        .env("DATABASE_URL", "sqlite://unused-by-an-offline-check.db") // must not be opened
        .output()
        .unwrap();
    let _ = std::fs::remove_file(&path);
    (output.status.code(), String::from_utf8_lossy(&output.stdout).into_owned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_auditors_jsonl_export_verifies_offline_and_one_changed_byte_is_found() {
    let app = TestApp::spawn().await;
    let token = app.token("intake", &["sales"]).await;
    app.user("sato", &["staff"], &["sales"]).await;
    app.user("kansa", &["auditor"], &[]).await;
    pending_request(&app, &token, &caller(&app, "sato").await, "ORD-EXP-1").await;
    let cookie = app.sign_in("kansa", PASSWORD).await;

    let (status, headers, body) = download(&app, "format=jsonl", Some(&cookie)).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert!(headers["content-disposition"].to_str().unwrap().starts_with("attachment; filename=\"audit-"));
    let trailer: serde_json::Value = serde_json::from_str(body.lines().last().unwrap()).unwrap();
    let events = app.audit_actions().await;
    assert_eq!(trailer["trailer"]["rows"], events.len(), "every event up to the export's own record");
    assert_eq!(events.last().unwrap(), "audit.exported", "the export is audited");

    let (code, said) = verify_file(&body);
    assert_eq!(code, Some(0), "{said}");
    assert!(said.contains("the whole chain up to its head"), "{said}");
    let changed = body.replacen("ORD-EXP-1", "ORD-EXP-2", 1);
    let (code, said) = verify_file(&changed);
    assert_eq!(code, Some(1), "{said}");
    assert!(said.contains("hash does not match"), "{said}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_csv_export_is_rfc_4180_with_formulas_neutralised_and_a_filtered_export_keeps_its_filter() {
    let app = TestApp::spawn().await;
    let token = app.token("intake", &["sales"]).await;
    app.user("sato", &["staff"], &["sales"]).await;
    app.user("suzuki", &["manager"], &["sales"]).await;
    app.user("kansa", &["auditor"], &[]).await;
    let id = pending_request(&app, &token, &caller(&app, "sato").await, "ORD-EXP-3").await;
    let formula = "=HYPERLINK(\"http://evil.example\",\"ok\")";
    decide(&app.state, &caller(&app, "suzuki").await, &id, Decision::Reject, formula).await.unwrap();
    let cookie = app.sign_in("kansa", PASSWORD).await;

    // Japanese Excel reads it as UTF-8 only with a byte-order mark; a tool asks for the file without one.
    let raw = |query: &str| {
        let request = app.http.get(format!("{}/audit/export?{query}", app.url)).header("cookie", &cookie);
        async move { request.send().await.unwrap().bytes().await.unwrap() }
    };
    // Its columns are headed in the reader's language (Japanese by default); a tool asks for their codes.
    assert!(
        raw("format=csv&process_id=ORD-EXP-3").await.starts_with("\u{FEFF}通番,日時（UTC）,".as_bytes()),
        "a byte-order mark first"
    );
    let english = app.http.get(format!("{}/audit/export?format=csv&process_id=ORD-EXP-3", app.url));
    let english = english.header("cookie", format!("{cookie}; lang=en")).send().await.unwrap().text().await.unwrap();
    assert!(english.starts_with("\u{FEFF}Seq. no.,Time (UTC),Actor kind,"), "{english}");
    assert!(raw("format=csv&process_id=ORD-EXP-3&bom=false&columns=codes").await.starts_with(b"seq,at,actor_kind,"));
    let refused =
        app.http.get(format!("{}/audit/export?format=csv&columns=nonsense", app.url)).header("cookie", &cookie);
    assert_eq!(refused.send().await.unwrap().status(), StatusCode::BAD_REQUEST, "an unknown choice is refused");
    assert!(raw("format=jsonl&process_id=ORD-EXP-3").await.starts_with(b"{"), "JSON Lines never has one");
    let (status, _, body) = download(&app, "format=csv&process_id=ORD-EXP-3&from=2000-01-01", Some(&cookie)).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let mut reader = csv::ReaderBuilder::new().has_headers(true).from_reader(body.as_bytes());
    let records: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
    let rejected = records.iter().find(|r| &r[5] == "rerun_request.rejected").expect("the rejection is in the export");
    assert_eq!(&rejected[11], format!("'{formula}"), "the reason cannot run in a spreadsheet");
    let (proof, events): (Vec<_>, Vec<_>) = records[..records.len() - 1].iter().partition(|r| r[0].starts_with('#'));
    assert!(proof.iter().all(|r| &r[0] == "# checkpoint"), "the signed checkpoints come first");
    assert!(!proof.is_empty());
    assert!(events.iter().all(|r| &r[7] == "ORD-EXP-3"), "only the filtered process");
    let seqs: Vec<i64> = events.iter().map(|r| r[0].parse().unwrap()).collect();
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "in sequence order: {seqs:?}");
    let trailer = records.last().unwrap();
    assert_eq!(&trailer[0], "# trailer");
    let trailer: serde_json::Value = serde_json::from_str(&trailer[1]).unwrap();
    assert_eq!(trailer["filter"]["process_id"], "ORD-EXP-3");
    assert_eq!(trailer["rows"], events.len());
    assert!(body.contains("\r\n"), "CRLF line ends");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_auditors_export_and_staff_see_only_their_departments_events() {
    let app = TestApp::spawn().await;
    let token = app.token("intake", &["sales", "billing"]).await;
    app.user("sato", &["staff"], &["sales"]).await;
    let kato = app.user("kato", &["staff"], &["billing"]).await;
    pending_request(&app, &token, &caller(&app, "sato").await, "ORD-EXP-4").await;

    let (status, _, _) = download(&app, "format=csv", None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let cookie = app.sign_in("kato", PASSWORD).await;
    let (status, _, _) = download(&app, "format=csv", Some(&cookie)).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert!(!app.audit_actions().await.contains(&"audit.exported".to_string()), "a refused export leaves no export");

    let everything = AuditFilter::default();
    let (sales, _) = audit_trail::page(&app.state, &caller(&app, "sato").await, &everything, None, true).await.unwrap();
    assert!(sales.iter().any(|e| e.object_id == "ORD-EXP-4"));
    assert!(sales.iter().all(|e| e.department.as_deref() == Some("sales")), "no user or other-department events");
    let (billing, _) =
        audit_trail::page(&app.state, &caller(&app, "kato").await, &everything, None, true).await.unwrap();
    assert!(billing.iter().all(|e| e.department.as_deref() == Some("billing")), "{billing:?}");
    assert!(!billing.iter().any(|e| e.object_id == "ORD-EXP-4"), "not another department's operation");

    app.user("kansa", &["auditor"], &[]).await;
    let one_user =
        AuditFilter { object_type: Some("user".into()), object_id: Some(kato.to_string()), ..Default::default() };
    let (events, _) = audit_trail::page(&app.state, &caller(&app, "kansa").await, &one_user, None, true).await.unwrap();
    assert!(
        !events.is_empty() && events.iter().all(|e| e.object_type == "user" && e.object_id == kato.to_string()),
        "{events:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_chain_check_goes_on_from_its_last_check_and_finds_an_edit_made_since() {
    let app = TestApp::spawn().await;
    assert_eq!(audit_trail::chain_status(&app.state).await.unwrap(), ChainStatus::Unchecked);
    for name in ["a-user", "b-user"] {
        app.user(name, &["auditor"], &[]).await;
    }
    let ChainStatus::Intact { seq: first, .. } = audit_trail::check_chain(&app.state).await.unwrap() else {
        panic!("intact")
    };
    app.user("c-user", &["auditor"], &[]).await;
    let ChainStatus::Intact { seq: shown, .. } = audit_trail::chain_status(&app.state).await.unwrap() else {
        panic!("intact")
    };
    assert_eq!(shown, first, "the page shows what the last check found, and checks nothing itself");
    let ChainStatus::Intact { seq: second, .. } = audit_trail::check_chain(&app.state).await.unwrap() else {
        panic!("intact")
    };
    assert!(second > first);
    app.user("d-user", &["auditor"], &[]).await;
    let edited = second + 1;
    crate::audit_trail::tamper(app.db(), &format!("UPDATE audit_events SET actor_label = 'x' WHERE seq = {edited}"))
        .await;
    let broken = ChainStatus::Broken { seq: edited, problem: "hash does not match the event's content".into() };
    assert_eq!(audit_trail::check_chain(&app.state).await.unwrap(), broken);
    assert_eq!(audit_trail::chain_status(&app.state).await.unwrap(), broken, "the page shows the break");
}

async fn bundle(app: &TestApp, process_id: &str, cookie: &str) -> (StatusCode, Vec<u8>) {
    let answer = app
        .http
        .get(format!("{}/operations/{process_id}/evidence.zip", app.url))
        .header("cookie", cookie)
        .send()
        .await
        .unwrap();
    (answer.status(), answer.bytes().await.unwrap().to_vec())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_evidence_bundle_holds_every_event_of_its_process_and_nothing_of_another_department() {
    let app = TestApp::spawn().await;
    let token = app.token("intake", &["sales", "billing"]).await;
    app.user("sato", &["staff"], &["sales"]).await;
    app.user("kato", &["staff"], &["billing"]).await;
    pending_request(&app, &token, &caller(&app, "sato").await, "ORD-EV-1").await;
    let billing = serde_json::json!({"process_id": "INV-EV-2", "workflow": "monthly-billing", "department": "billing",
        "steps": [{"name": "draft_invoice", "idempotency_key": "INV-EV-2-d"}, {"name": "send_mail", "idempotency_key": "INV-EV-2-m"},
                  {"name": "issue_invoice", "idempotency_key": "INV-EV-2-i"}]});
    app.api(reqwest::Method::POST, "/api/v1/operations", &token, Some("INV-EV-2"), Some(&billing)).await;

    let other = app.sign_in("kato", PASSWORD).await;
    let (status, _) = bundle(&app, "ORD-EV-1", &other).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "another department's operation does not exist for them");

    let cookie = app.sign_in("sato", PASSWORD).await;
    let (status, bytes) = bundle(&app, "ORD-EV-1", &cookie).await;
    assert_eq!(status, StatusCode::OK);
    let mut zip = zip::ZipArchive::new(std::io::Cursor::new(bytes)).unwrap();
    let mut files = std::collections::BTreeMap::new();
    for i in 0..zip.len() {
        let mut file = zip.by_index(i).unwrap();
        let mut text = String::new();
        std::io::Read::read_to_string(&mut file, &mut text).unwrap();
        files.insert(file.name().unwrap().to_string(), text);
    }
    for name in ["operation.json", "reconciliations.json", "rerun_requests.json", "audit_events.jsonl", "README.txt"] {
        assert!(files.contains_key(&format!("ORD-EV-1/{name}")), "{name} in {:?}", files.keys());
    }
    assert!(files.values().all(|text| !text.contains("INV-EV-2") && !text.contains("billing")), "nothing of billing");
    assert!(files["ORD-EV-1/rerun_requests.json"].contains("pending_approval"));
    let readme = &files["ORD-EV-1/README.txt"];
    assert!(
        readme.contains("ORD-EV-1 の証跡一式") && readme.contains("evidence bundle for ORD-EV-1"),
        "both languages"
    );

    let audit = &files["ORD-EV-1/audit_events.jsonl"];
    let rows: Vec<serde_json::Value> = audit.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let (rows, trailer) = rows.split_at(rows.len() - 1);
    let checkpoints: Vec<&serde_json::Value> = rows.iter().filter_map(|r| r.get("checkpoint")).collect();
    let events: Vec<&serde_json::Value> = rows.iter().filter(|r| r.get("seq").is_some()).collect();
    assert_eq!(checkpoints.last().unwrap()["seq"], trailer[0]["trailer"]["head_seq"], "signed at the bundle's head");
    let mut tx = app.db().begin_read().await.unwrap();
    let everything = backend::db::audit::page_after(&mut tx, 0, 10_000).await.unwrap();
    let expected: Vec<i64> = everything
        .iter()
        .filter(|e| e.object_type == "operation" && e.object_id == "ORD-EV-1")
        .map(|e| e.seq)
        .collect();
    let got: Vec<i64> = events.iter().map(|e| e["seq"].as_i64().unwrap()).collect();
    assert_eq!(got, expected, "every event of the process, the bundle's own record included");
    assert_eq!(events.last().unwrap()["action"], "operation.evidence_exported");
    assert_eq!(trailer[0]["trailer"]["rows"], expected.len());
    let (code, said) = verify_file(audit);
    assert_eq!(code, Some(0), "{said}");
    assert!(said.contains("signed checkpoints matched: 1"), "{said}");
    let taken = everything.iter().filter(|e| e.action == "operation.evidence_exported").count();
    assert_eq!(taken, 1, "only the bundle that was handed out is recorded");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mistyped_date_in_the_filter_is_refused_by_its_field_in_the_readers_language() {
    let app = TestApp::spawn().await;
    app.user("tanaka", &["auditor"], &[]).await;
    let cookie = app.sign_in("tanaka", PASSWORD).await;
    let page = app.call_json("audit/page", serde_json::json!({"filter": {"from": "2026/11/30"}}), Some(&cookie)).await;
    assert_eq!(page.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", page.body);
    let refusal: contract::AppError = serde_json::from_str(&page.body).unwrap();
    assert_eq!(
        app::ui::error_in(words::i18n::Locale::ja, &refusal),
        "期間（から）: 日付または日時の形式ではありません（例: 2026-11-30）"
    );

    let (status, _, body) = download(&app, "format=csv&to=30.11.2026", Some(&cookie)).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert!(body.contains(r#""field":"to""#), "the export names the field too: {body}");
}

/// The bundle's files are named from the process ID made safe: one with `/` and `..` unzips into one folder of
/// its own, and the ID itself, as it was registered, is inside the JSON.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_bundle_of_a_process_id_with_dots_and_slashes_unzips_into_one_folder_of_its_own() {
    let app = TestApp::spawn().await;
    let token = app.token("intake", &["sales"]).await;
    app.user("sato", &["staff"], &["sales"]).await;
    let body = serde_json::json!({"process_id": "../../x", "workflow": "order-intake", "department": "sales",
        "steps": [{"name": "register_order", "idempotency_key": "dots-r"}, {"name": "ai_summary", "idempotency_key": "dots-s"}]});
    let registered = app.api(reqwest::Method::POST, "/api/v1/operations", &token, Some("dots-1"), Some(&body)).await;
    assert_eq!(registered.status, StatusCode::CREATED, "{}", registered.body);
    let cookie = app.sign_in("sato", PASSWORD).await;
    let (status, bytes) = bundle(&app, "..%2F..%2Fx", &cookie).await;
    assert_eq!(status, StatusCode::OK);
    let mut zip = zip::ZipArchive::new(std::io::Cursor::new(bytes)).unwrap();
    let mut folders = std::collections::BTreeSet::new();
    for i in 0..zip.len() {
        let mut file = zip.by_index(i).unwrap();
        let path =
            file.enclosed_name().unwrap_or_else(|| panic!("{:?} leaves the folder it is unzipped in", file.name()));
        let parts: Vec<std::path::Component> = path.components().collect();
        assert!(parts.len() == 2 && parts.iter().all(|p| matches!(p, std::path::Component::Normal(_))), "{path:?}");
        folders.insert(parts[0].as_os_str().to_owned());
        if path.ends_with("operation.json") {
            let mut text = String::new();
            std::io::Read::read_to_string(&mut file, &mut text).unwrap();
            assert!(text.contains("\"../../x\""), "the process ID as registered: {text}");
        }
    }
    assert_eq!(folders.len(), 1, "{folders:?}");
}
