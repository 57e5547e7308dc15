//! QUALITY 29: canary secrets — a password, a wrong password, an API token, a webhook secret and a connector
//! credential — planted in a real server process never show in its logs (at debug level), its answers, its
//! pages or its exports, while the main flows run through it.
use crate::harness::{TestApp, server_process};
use base64::Engine;
use reqwest::StatusCode;

const PASSWORD: &str = "canary-password-5f0b2c71";
const WRONG_PASSWORD: &str = "canary-wrong-password-93ad";
const CONNECTOR_KEY: &str = "canary-connector-key-41e7";
const WEBHOOK_KEY: &[u8] = b"canary-webhook-key-2b8d0c";

/// The example configuration plus a generic connector whose credential comes from `RG_CANARY_KEY`.
fn config_with_a_credential() -> std::path::PathBuf {
    let path = std::env::temp_dir().join(format!("rerun-gate-canary-{}.toml", uuid::Uuid::new_v4().simple()));
    let example = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../rerun-gate.toml")).unwrap();
    let connector = "\n[[connector]]\nname = \"canary-live\"\nkind = \"http_json\"\npreset = \"ai_responses\"\n\
                     base_url = \"https://ai.example.com\"\napi_key_env = \"RG_CANARY_KEY\"\n";
    // Connectors come before the workflows in the file; appending one at the end would land in a table.
    let at = example.find("\n[[workflow]]").unwrap() + 1;
    std::fs::write(&path, format!("{}{connector}\n{}", &example[..at], &example[at..])).unwrap();
    path
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn canary_secrets_never_appear_in_logs_answers_pages_or_exports() {
    let app = TestApp::spawn().await;
    let new = contract::admin::NewUser {
        username: "kanari".into(),
        display_name: "Kanari".into(),
        password: PASSWORD.into(),
        roles: domain::roles::Role::ALL.to_vec(),
        departments: vec!["sales".into()],
        memberships: Vec::new(),
        email: "kanari@example.jp".into(),
    };
    backend::services::users::add(
        &app.state,
        domain::audit::Actor::system(domain::audit::SystemActor::CommandLine),
        None,
        new,
    )
    .await
    .unwrap();
    let token = app.token("canary-client", &["sales"]).await;
    let webhook_secret = format!("whsec_{}", base64::engine::general_purpose::STANDARD.encode(WEBHOOK_KEY));
    let log = std::env::temp_dir().join(format!("rerun-gate-canary-{}.log", uuid::Uuid::new_v4().simple()));

    let env = [
        ("RERUN_GATE_WEBHOOK_SECRET_AI", webhook_secret.as_str()),
        ("RG_CANARY_KEY", CONNECTOR_KEY),
        ("RUST_LOG", "debug"),
    ];
    let (mut server, url) = server_process(&app.database_url, &config_with_a_credential(), &env, Some(&log)).await;
    let http = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();

    let mut answers = String::new();
    let mut keep =
        |what: &str, status: StatusCode, body: String| answers.push_str(&format!("{what} {status}\n{body}\n"));
    // Sign-in: refused with the wrong password, then accepted; a password change refused for the wrong one.
    let form = |password: &str| [("username", "kanari".to_string()), ("password", password.to_string())];
    let refused = http.post(format!("{url}/api/sign_in")).form(&form(WRONG_PASSWORD)).send().await.unwrap();
    assert_eq!(refused.status(), StatusCode::UNPROCESSABLE_ENTITY);
    keep("sign-in refused", refused.status(), refused.text().await.unwrap());
    let signed_in = http.post(format!("{url}/api/sign_in")).form(&form(PASSWORD)).send().await.unwrap();
    assert_eq!(signed_in.status(), StatusCode::OK);
    let cookies = signed_in.headers().get_all("set-cookie").iter();
    let cookie =
        cookies.map(|c| c.to_str().unwrap().split(';').next().unwrap().to_string()).collect::<Vec<_>>().join("; ");
    keep("sign-in", StatusCode::OK, signed_in.text().await.unwrap());
    let change = [("current_password", WRONG_PASSWORD), ("new_password", "another-long-password-1")];
    let changed =
        http.post(format!("{url}/api/change_password")).header("cookie", &cookie).form(&change).send().await.unwrap();
    assert!(changed.status().is_client_error());
    keep("password change", changed.status(), changed.text().await.unwrap());
    // The pages and functions that show configuration, clients and the trail.
    for path in ["/", "/admin/configuration", "/admin/api-clients", "/audit", "/account"] {
        let page = http.get(format!("{url}{path}")).header("cookie", &cookie).send().await.unwrap();
        keep(path, page.status(), page.text().await.unwrap());
    }
    for endpoint in ["admin/configuration", "admin/list_api_clients", "me"] {
        let answer = http.post(format!("{url}/api/{endpoint}")).header("cookie", &cookie).send().await.unwrap();
        assert_eq!(answer.status(), StatusCode::OK, "{endpoint}");
        keep(endpoint, StatusCode::OK, answer.text().await.unwrap());
    }
    // The API with the token, a wrong token, and the token in the URL (never accepted there).
    let body = serde_json::json!({"process_id": "ORD-CANARY", "workflow": "order-intake", "department": "sales",
        "steps": [{"name": "register_order", "idempotency_key": "ORD-CANARY-r"}, {"name": "ai_summary", "idempotency_key": "ORD-CANARY-s"}]});
    let registered = http
        .post(format!("{url}/api/v1/operations"))
        .bearer_auth(&token)
        .header("idempotency-key", "ORD-CANARY")
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(registered.status(), StatusCode::CREATED);
    keep("register", registered.status(), registered.text().await.unwrap());
    let wrong =
        http.get(format!("{url}/api/v1/operations/ORD-CANARY")).bearer_auth(format!("{token}x")).send().await.unwrap();
    assert_eq!(wrong.status(), StatusCode::UNAUTHORIZED);
    keep("wrong token", wrong.status(), wrong.text().await.unwrap());
    let in_url = http.get(format!("{url}/api/v1/operations/ORD-CANARY?access_token={token}")).send().await.unwrap();
    assert_eq!(in_url.status(), StatusCode::UNAUTHORIZED);
    keep("token in URL", in_url.status(), in_url.text().await.unwrap());
    // Webhooks: a forged signature refused, a signed one taken.
    let secret = domain::webhooks::Secret::parse(&webhook_secret).unwrap();
    let hook = br#"{"type":"response.completed","data":{"id":"resp_canary"}}"#;
    let now = chrono::Utc::now().timestamp();
    for (id, signature) in
        [("msg_forged", "v1,Zm9yZ2Vk".to_string()), ("msg_signed", secret.sign("msg_signed", now, hook))]
    {
        let answer = http
            .post(format!("{url}/hooks/ai-summary"))
            .header("webhook-id", id)
            .header("webhook-timestamp", now.to_string())
            .header("webhook-signature", signature)
            .header("content-type", "application/json")
            .body(hook.to_vec())
            .send()
            .await
            .unwrap();
        keep(id, answer.status(), answer.text().await.unwrap());
    }
    // The auditors' exports, which hold every event of the above.
    for format in ["csv", "jsonl"] {
        let export =
            http.get(format!("{url}/audit/export?format={format}")).header("cookie", &cookie).send().await.unwrap();
        assert_eq!(export.status(), StatusCode::OK);
        keep(format, StatusCode::OK, export.text().await.unwrap());
    }
    let _ = server.kill();
    let _ = server.wait();

    let logs = std::fs::read_to_string(&log).unwrap();
    assert!(
        logs.contains("sign-in failed") && logs.contains("webhook refused"),
        "the flows ran and were logged:\n{logs}"
    );
    assert!(answers.contains("ORD-CANARY") && answers.contains("canary-live"), "the answers hold what the flows did");
    let canaries =
        [PASSWORD, WRONG_PASSWORD, token.as_str(), CONNECTOR_KEY, webhook_secret.as_str(), "canary-webhook-key"];
    for canary in canaries {
        assert!(!logs.contains(canary), "a secret is in the server's log: {canary}");
        assert!(!answers.contains(canary), "a secret is in an answer, page or export: {canary}");
    }
    let _ = std::fs::remove_file(&log);
}
