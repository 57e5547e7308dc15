//! A local stand-in for Slack: its Web API (`/api/{method}`, checking the bot token) and the `response_url` of a
//! press (`/response/{n}`); it records every call. Interactions are signed with Slack's own SDK (`slack_sdk`, in
//! the virtual environment `make deps-test` makes) and sent to the app as Slack sends them.
use crate::harness::{Answer, TestApp};
use backend::Clock;
use domain::chat::ChatSubject;
use domain::configuration::{ChatSignIn, SlackConfig};
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};

pub use crate::harness::{SLACK_BOT_TOKEN as BOT_TOKEN, SLACK_SIGNING_SECRET as SIGNING_SECRET};
pub const TEAM: &str = "T0RERUNGATE";
pub const SALES_CHANNEL: &str = "C0SALES";

type Calls = Arc<Mutex<Vec<(String, Value)>>>;

pub struct SlackStandIn {
    pub url: String,
    calls: Calls,
}

impl SlackStandIn {
    pub async fn start() -> SlackStandIn {
        let calls: Calls = Arc::default();
        let recorded = calls.clone();
        let ts = Arc::new(std::sync::atomic::AtomicU64::new(1_700_000_000));
        let api = move |axum::extract::Path(method): axum::extract::Path<String>,
                        headers: axum::http::HeaderMap,
                        axum::Json(body): axum::Json<Value>| {
            let (recorded, ts) = (recorded.clone(), ts.clone());
            async move {
                if headers.get("authorization").and_then(|v| v.to_str().ok()) != Some(&format!("Bearer {BOT_TOKEN}")) {
                    return axum::Json(json!({"ok": false, "error": "invalid_auth"}));
                }
                recorded.lock().unwrap().push((method.clone(), body.clone()));
                let answer = match method.as_str() {
                    "chat.postMessage" => {
                        let to = body["channel"].as_str().unwrap_or_default();
                        // A direct message to a person lands in their conversation with the app.
                        let channel = to.strip_prefix('U').map_or_else(|| to.to_string(), |id| format!("D{id}"));
                        let ts = ts.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                        json!({"ok": true, "channel": channel, "ts": format!("{ts}.000100")})
                    }
                    _ => json!({"ok": true}),
                };
                axum::Json(answer)
            }
        };
        let recorded = calls.clone();
        let respond = move |axum::Json(body): axum::Json<Value>| {
            let recorded = recorded.clone();
            async move {
                recorded.lock().unwrap().push(("response_url".into(), body));
                "ok"
            }
        };
        let router = axum::Router::new()
            .route("/api/{method}", axum::routing::post(api))
            .route("/response/{n}", axum::routing::post(respond));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
        SlackStandIn { url, calls }
    }

    /// The bodies of the calls to one method (`response_url` for the answers to presses).
    pub fn calls(&self, method: &str) -> Vec<Value> {
        self.calls.lock().unwrap().iter().filter(|(m, _)| m == method).map(|(_, body)| body.clone()).collect()
    }

    /// Waits (up to ten seconds) until there are `n` calls to `method`: the app answers Slack first and
    /// decides after.
    pub async fn wait_for(&self, method: &str, n: usize) -> Vec<Value> {
        for _ in 0..200 {
            let calls = self.calls(method);
            if calls.len() >= n {
                return calls;
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        panic!("{method} was called {} times, not {n}: {:?}", self.calls(method).len(), self.calls.lock().unwrap());
    }

    /// `[chat.slack]` pointing at this stand-in; Slack's sign-in at `issuer`.
    pub fn config(&self, issuer: &str) -> SlackConfig {
        SlackConfig {
            bot_token_env: "RG_TEST_SLACK_TOKEN".into(),
            signing_secret_env: "RG_TEST_SLACK_SIGNING_SECRET".into(),
            api_url: format!("{}/api", self.url),
            allow_loopback: true,
            channels: [("sales".to_string(), SALES_CHANNEL.to_string())].into(),
            direct_messages: false,
            sign_in: ChatSignIn {
                issuer: issuer.to_string(),
                client_id: "rerun-gate".into(),
                // The tests' identity provider plays Slack's sign-in, with its one client.
                client_secret_env: "RG_TEST_OIDC_SECRET".into(),
            },
        }
    }
}

/// The example configuration with Slack, its order intake decided in chat or not.
pub fn with_slack(slack: SlackConfig, decide_in_chat: bool) -> backend::config::Config {
    let mut config = crate::harness::example_config();
    config.slack = Some(slack);
    for workflow in &mut config.workflows {
        workflow.decide_in_chat = decide_in_chat;
    }
    config
}

/// Slack's signature for `body` at `timestamp`, from Slack's SDK.
pub fn slack_sdk_signature(secret: &str, timestamp: i64, body: &str) -> String {
    use std::io::Write;
    let python = concat!(env!("CARGO_MANIFEST_DIR"), "/../target/slack-venv/bin/python");
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/it/slack_sign.py");
    let mut child = std::process::Command::new(python)
        .args([script, secret, &timestamp.to_string()])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("target/slack-venv holds Slack's SDK (make deps-test installs it)");
    child.stdin.take().unwrap().write_all(body.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "slack_sign.py failed");
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// An interaction as Slack posts it: the payload as a form field, signed at `timestamp`.
pub fn form(payload: &Value) -> String {
    url::form_urlencoded::Serializer::new(String::new()).append_pair("payload", &payload.to_string()).finish()
}

/// Posts a signed body to the interactions endpoint.
pub async fn post(app: &TestApp, body: &str, timestamp: i64, signature: &str) -> Answer {
    let answer = app
        .http
        .post(format!("{}/hooks/slack/interactions", app.url))
        .header("content-type", "application/x-www-form-urlencoded")
        .header("x-slack-request-timestamp", timestamp.to_string())
        .header("x-slack-signature", signature)
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    let status = answer.status();
    let headers = answer.headers().clone();
    Answer { status, headers, body: answer.text().await.unwrap() }
}

/// Slack sends `payload` now (the app's clock), signed with the app's signing secret.
pub async fn send(app: &TestApp, payload: &Value) -> Answer {
    let body = form(payload);
    let now = app.clock.now().timestamp();
    post(app, &body, now, &slack_sdk_signature(SIGNING_SECRET, now, &body)).await
}

/// A press of a decision message's button (`rerun_approve`, `rerun_reject`) by `user`.
pub fn press(stand_in: &SlackStandIn, user: &str, action: &str, subject: &ChatSubject) -> Value {
    let n = uuid::Uuid::new_v4().simple();
    json!({
        "type": "block_actions",
        "team": {"id": TEAM, "domain": "rerun-gate"},
        "user": {"id": user, "team_id": TEAM},
        "channel": {"id": SALES_CHANNEL},
        "container": {"type": "message", "channel_id": SALES_CHANNEL, "message_ts": "1700000000.000100"},
        "trigger_id": format!("trigger.{n}"),
        "response_url": format!("{}/response/{n}", stand_in.url),
        "actions": [{"type": "button", "action_id": action, "block_id": subject.value(),
            "value": subject.value(), "action_ts": "1700000001.000200"}]
    })
}

/// The reject modal sent back with `comment`, as the app opened it (its metadata).
pub fn submitted_modal(opened: &Value, user: &str, comment: &str) -> Value {
    json!({
        "type": "view_submission",
        "team": {"id": TEAM},
        "user": {"id": user, "team_id": TEAM},
        "view": {
            "type": "modal",
            "callback_id": opened["view"]["callback_id"],
            "private_metadata": opened["view"]["private_metadata"],
            "state": {"values": {"comment": {"comment": {"type": "plain_text_input", "value": comment}}}}
        }
    })
}
