//! A local stand-in for Microsoft's side of a Teams bot: the Bot Framework's OpenID metadata and keys (a test
//! key, endorsed for `msteams`), the token endpoint of the client-credentials flow, and the Bot Connector API
//! (post and update an activity), recording every call. Activities are signed with the published test key, as the
//! Bot Framework signs them; another key (not published) forges them.
use crate::harness::TestApp;
use backend::Clock;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use domain::configuration::TeamsConfig;
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};

pub const APP_ID: &str = "00000000-0000-4000-8000-00000000b07f";
pub const TENANT: &str = "11111111-2222-4333-8444-555555555555";
pub const SALES_CONVERSATION: &str = "19:sales@thread.tacv2";
const KEY_ID: &str = "teams-test-key";
const KEY: &str = include_str!("teams-test-key.pem");
const OTHER_KEY: &str = include_str!("teams-other-key.pem");

type Calls = Arc<Mutex<Vec<(String, String, Value)>>>;

pub struct TeamsStandIn {
    pub url: String,
    calls: Calls,
}

/// The test key as the Bot Framework publishes its keys (a JWK with its endorsements).
fn published_key() -> Value {
    use rsa::pkcs1::DecodeRsaPrivateKey;
    use rsa::traits::PublicKeyParts;
    let key = rsa::RsaPrivateKey::from_pkcs1_pem(KEY).unwrap();
    json!({"kty": "RSA", "use": "sig", "alg": "RS256", "kid": KEY_ID,
        "n": URL_SAFE_NO_PAD.encode(key.n().to_bytes_be()), "e": URL_SAFE_NO_PAD.encode(key.e().to_bytes_be()),
        // As the Bot Framework's keys do, it signs for other channels too (Web Chat, Direct Line).
        "endorsements": ["msteams", "webchat", "directline"]})
}

impl TeamsStandIn {
    pub async fn start() -> TeamsStandIn {
        let calls: Calls = Arc::default();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let base = url.clone();
        let recorded = calls.clone();
        let connector = move |method: axum::http::Method,
                              uri: axum::http::Uri,
                              headers: axum::http::HeaderMap,
                              axum::Json(body): axum::Json<Value>| {
            let recorded = recorded.clone();
            async move {
                if headers.get("authorization").and_then(|v| v.to_str().ok()) != Some("Bearer teams-bot-token") {
                    return (axum::http::StatusCode::UNAUTHORIZED, axum::Json(json!({})));
                }
                let mut calls = recorded.lock().unwrap();
                calls.push((method.to_string(), uri.path().to_string(), body.clone()));
                let id = body["id"].as_str().map_or_else(|| format!("activity-{}", calls.len()), str::to_string);
                (axum::http::StatusCode::OK, axum::Json(json!({"id": id})))
            }
        };
        let token = |axum::Form(form): axum::Form<std::collections::HashMap<String, String>>| async move {
            let right = form.get("client_secret").map(String::as_str) == Some(crate::harness::TEAMS_APP_PASSWORD)
                && form.get("client_id").map(String::as_str) == Some(APP_ID);
            if right {
                (axum::http::StatusCode::OK, axum::Json(json!({"access_token": "teams-bot-token", "expires_in": 3600})))
            } else {
                (axum::http::StatusCode::BAD_REQUEST, axum::Json(json!({"error": "invalid_client"})))
            }
        };
        let router =
            axum::Router::new()
                .route(
                    "/metadata",
                    axum::routing::get(move || {
                        let base = base.clone();
                        async move {
                            axum::Json(json!({"issuer": backend::teams::ISSUER, "jwks_uri": format!("{base}/keys")}))
                        }
                    }),
                )
                .route("/keys", axum::routing::get(|| async { axum::Json(json!({"keys": [published_key()]})) }))
                .route("/token", axum::routing::post(token))
                .route("/v3/conversations/{conversation}/activities", axum::routing::post(connector.clone()))
                .route("/v3/conversations/{conversation}/activities/{id}", axum::routing::put(connector));
        tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
        TeamsStandIn { url, calls }
    }

    /// The bodies of the calls (`POST` a new activity, `PUT` an update).
    pub fn calls(&self, method: &str) -> Vec<(String, Value)> {
        let calls = self.calls.lock().unwrap();
        calls.iter().filter(|(m, ..)| m == method).map(|(_, path, body)| (path.clone(), body.clone())).collect()
    }

    pub fn config(&self) -> TeamsConfig {
        TeamsConfig {
            app_id: APP_ID.into(),
            app_password_env: "RG_TEST_TEAMS_APP_PASSWORD".into(),
            tenant_id: TENANT.into(),
            service_url: self.url.clone(),
            conversations: [("sales".to_string(), SALES_CONVERSATION.to_string())].into(),
            openid_metadata_url: format!("{}/metadata", self.url),
            token_url: format!("{}/token", self.url),
            allow_loopback: true,
        }
    }

    /// A press of a decision card's `Action.Execute` by the person whose Entra object ID is `object_id`.
    pub fn press(&self, object_id: &str, verb: &str, subject: &str, comment: &str) -> Value {
        json!({
            "type": "invoke", "name": "adaptiveCard/action", "channelId": "msteams",
            "serviceUrl": self.url, "id": uuid::Uuid::new_v4().to_string(),
            "from": {"id": format!("29:{object_id}"), "aadObjectId": object_id},
            "recipient": {"id": format!("28:{APP_ID}")},
            "conversation": {"id": SALES_CONVERSATION, "tenantId": TENANT, "conversationType": "channel"},
            "channelData": {"tenant": {"id": TENANT}},
            "value": {"action": {"type": "Action.Execute", "verb": verb, "data": {"subject": subject, "comment": comment}},
                "trigger": "manual"}
        })
    }
}

/// What the Bot Framework's token says; each test changes what it attacks.
pub struct Token<'a> {
    pub issuer: &'a str,
    pub audience: &'a str,
    pub service_url: &'a str,
    /// Seconds from the app's now.
    pub expires_in: i64,
    pub forged: bool,
}

impl Token<'_> {
    pub fn valid(service_url: &str) -> Token<'_> {
        Token { issuer: backend::teams::ISSUER, audience: APP_ID, service_url, expires_in: 3600, forged: false }
    }

    fn sign(&self, now: i64) -> String {
        let mut claims = json!({"iss": self.issuer, "aud": self.audience, "serviceurl": self.service_url,
            "nbf": now - 60, "exp": now + self.expires_in});
        if self.service_url.is_empty() {
            claims.as_object_mut().unwrap().remove("serviceurl"); // a token that names no service URL
        }
        let mut header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::RS256);
        header.kid = Some(KEY_ID.into());
        let key =
            jsonwebtoken::EncodingKey::from_rsa_pem(if self.forged { OTHER_KEY } else { KEY }.as_bytes()).unwrap();
        jsonwebtoken::encode(&header, &claims, &key).unwrap()
    }
}

/// Teams sends `activity` to the bot's messaging endpoint with `token`; the status and the JSON answer.
pub async fn send(app: &TestApp, activity: &Value, token: &Token<'_>) -> (reqwest::StatusCode, Value) {
    let answer = app
        .http
        .post(format!("{}/hooks/teams/messages", app.url))
        .bearer_auth(token.sign(app.clock.now().timestamp()))
        .json(activity)
        .send()
        .await
        .unwrap();
    let status = answer.status();
    (status, answer.json().await.unwrap_or_default())
}
