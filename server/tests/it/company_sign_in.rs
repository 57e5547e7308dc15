//! Company sign-in against a real OpenID Connect provider: `oidc-provider` (npm, OpenID Certified), started by
//! scripts/oidc-provider/provider.mjs on a free loopback port with test users and groups.
use crate::fixtures::{caller, pending_request};
use crate::harness::{Answer, PASSWORD, TestApp, example_config};
use backend::oidc::{OidcProblem, Provider};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use chrono::{DateTime, Duration, Utc};
use domain::configuration::OidcConfig;
use domain::identity::GroupMapping;
use domain::roles::Role;
use openidconnect::core::{CoreIdToken, CoreIdTokenClaims, CoreJwsSigningAlgorithm, CoreRsaPrivateSigningKey};
use openidconnect::{
    Audience, EmptyAdditionalClaims, IssuerUrl, JsonWebKeyId, Nonce, StandardClaims, SubjectIdentifier,
};
use reqwest::StatusCode;
use serde_json::json;
use std::process::{Child, Command, Stdio};

pub const CLIENT_ID: &str = "rerun-gate";
pub const CLIENT_SECRET: &str = crate::harness::OIDC_CLIENT_SECRET;

/// A person at the provider: login, name, groups.
pub type Account<'a> = (&'a str, &'a str, &'a [&'a str]);

/// The provider process, its issuer URL and the file of its accounts; stopped when dropped.
pub struct TestProvider {
    child: Child,
    pub issuer: String,
    pub accounts: std::path::PathBuf,
}

impl TestProvider {
    /// `redirect` is the app's callback URL; the accounts are `(login, name, groups)`.
    pub fn start(redirect: &str, accounts: &[Account]) -> TestProvider {
        TestProvider::start_with_sign_out(redirect, "", accounts)
    }

    /// With the app's page to come back to after signing out at the provider.
    pub fn start_with_sign_out(redirect: &str, post_logout: &str, accounts: &[Account]) -> TestProvider {
        use std::io::BufRead;
        let file = std::env::temp_dir().join(format!("oidc-accounts-{}.json", uuid::Uuid::new_v4().simple()));
        TestProvider::write(&file, accounts);
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../scripts/oidc-provider/provider.mjs");
        let mut child = Command::new("node")
            .args([script, file.to_str().unwrap(), CLIENT_ID, CLIENT_SECRET, redirect, post_logout])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("node runs the test identity provider (make deps-test installs it)");
        let mut ready = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap()).read_line(&mut ready).unwrap();
        let issuer = ready.trim().strip_prefix("listening on ").expect("the provider says its issuer").to_string();
        TestProvider { child, issuer, accounts: file }
    }

    /// The provider's signing key (PKCS#1 PEM), which the script writes beside the accounts.
    fn key_file(&self) -> std::path::PathBuf {
        let mut name = self.accounts.clone().into_os_string();
        name.push(".key.pem");
        name.into()
    }

    /// An ID token for `subject` signed with the provider's own key, valid from `issued` until `expires`.
    pub fn sign(&self, subject: &str, nonce: &str, issued: DateTime<Utc>, expires: DateTime<Utc>) -> CoreIdToken {
        let key = CoreRsaPrivateSigningKey::from_pem(
            &std::fs::read_to_string(self.key_file()).unwrap(),
            Some(JsonWebKeyId::new("test-key".into())),
        )
        .unwrap();
        let claims = CoreIdTokenClaims::new(
            IssuerUrl::new(self.issuer.clone()).unwrap(),
            vec![Audience::new(CLIENT_ID.into())],
            expires,
            issued,
            StandardClaims::new(SubjectIdentifier::new(subject.into())),
            EmptyAdditionalClaims {},
        )
        .set_nonce(Some(Nonce::new(nonce.into())));
        CoreIdToken::new(claims, &key, CoreJwsSigningAlgorithm::RsaSsaPkcs1V15Sha256, None, None).unwrap()
    }

    /// Changes the accounts: their groups as of the next sign-in.
    pub fn set_accounts(&self, accounts: &[Account]) {
        TestProvider::write(&self.accounts, accounts);
    }

    fn write(file: &std::path::Path, accounts: &[Account]) {
        let json: serde_json::Map<String, serde_json::Value> = accounts
            .iter()
            .map(|(login, name, groups)| {
                let account =
                    serde_json::json!({"name": name, "email": format!("{login}@example.jp"), "groups": groups});
                (login.to_string(), account)
            })
            .collect();
        std::fs::write(file, serde_json::Value::Object(json).to_string()).unwrap();
    }

    pub fn config(&self) -> OidcConfig {
        OidcConfig {
            issuer: self.issuer.clone(),
            client_id: CLIENT_ID.into(),
            client_secret_env: Some("RG_TEST_OIDC_SECRET".into()),
            scopes: ["openid", "profile", "email", "groups"].map(String::from).to_vec(),
            groups_claim: "groups".into(),
            username_claim: "sub".into(),
            name_claim: "name".into(),
            email_claim: "email".into(),
            allow_loopback: true,
            groups: vec![
                GroupMapping {
                    group: "sales-approvers".into(),
                    roles: vec![Role::Manager],
                    departments: vec!["sales".into()],
                },
                GroupMapping {
                    group: "billing-staff".into(),
                    roles: vec![Role::Staff],
                    departments: vec!["billing".into()],
                },
                GroupMapping {
                    group: "sales-staff".into(),
                    roles: vec![Role::Staff],
                    departments: vec!["sales".into()],
                },
                GroupMapping {
                    group: "billing-approvers".into(),
                    roles: vec![Role::Manager],
                    departments: vec!["billing".into()],
                },
            ],
            decision: Default::default(),
        }
    }
}

impl Drop for TestProvider {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_file(&self.accounts);
        let _ = std::fs::remove_file(self.key_file());
    }
}

/// A browser at the provider: follows its redirects by hand (keeping its cookies) and signs in on its own
/// login page, until the provider sends it to `redirect`; returns that URL (with `code` and `state`).
pub async fn sign_in_at_provider(authorize: &str, login: &str, redirect: &str) -> reqwest::Url {
    let http = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    let mut cookies: Vec<String> = Vec::new();
    let mut next = reqwest::Url::parse(authorize).unwrap();
    let mut form: Option<Vec<(String, String)>> = None;
    for _ in 0..10 {
        if next.as_str().starts_with(redirect) {
            return next;
        }
        let mut request = match form.take() {
            Some(fields) => http.post(next.clone()).form(&fields),
            None => http.get(next.clone()),
        };
        if !cookies.is_empty() {
            request = request.header("cookie", cookies.join("; "));
        }
        let answer = request.send().await.unwrap();
        for set in answer.headers().get_all("set-cookie") {
            let pair = set.to_str().unwrap().split(';').next().unwrap().to_string();
            let name = pair.split('=').next().unwrap().to_string();
            cookies.retain(|c| !c.starts_with(&format!("{name}=")));
            cookies.push(pair);
        }
        match answer.headers().get("location") {
            Some(location) => next = next.join(location.to_str().unwrap()).unwrap(),
            None => {
                // The provider's login page: its form posts the login name and any password.
                let page = answer.text().await.unwrap();
                let action =
                    page.split("action=\"").nth(1).and_then(|rest| rest.split('"').next()).expect("a login form");
                next = next.join(action).unwrap();
                form = Some(vec![
                    ("prompt".into(), "login".into()),
                    ("login".into(), login.into()),
                    ("password".into(), "any".into()),
                ]);
            }
        }
    }
    panic!("the provider never sent the browser back to {redirect}");
}

fn code_and_state(back: &reqwest::Url) -> (String, String) {
    let value = |name: &str| back.query_pairs().find(|(k, _)| k == name).map(|(_, v)| v.into_owned()).unwrap();
    (value("code"), value("state"))
}

const REDIRECT: &str = "http://127.0.0.1:9/sign-in/oidc/callback";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_provider_vouches_for_a_person_with_their_groups_and_a_forged_state_or_nonce_is_refused() {
    backend::reconciliation::ssrf::install_tls_provider();
    let provider = TestProvider::start(REDIRECT, &[("suzuki", "鈴木 一郎", &["sales-approvers", "cafeteria"])]);
    let client = Provider::new(provider.config(), Some(CLIENT_SECRET.into()), "http://127.0.0.1:9").unwrap();

    let (authorize, pending) = client.begin("/approvals", None).await.unwrap();
    let back = sign_in_at_provider(&authorize, "suzuki", REDIRECT).await;
    let (code, state) = code_and_state(&back);
    let identity = client.finish(&pending, &code, &state).await.unwrap();
    assert_eq!((identity.subject.as_str(), identity.display_name.as_str()), ("suzuki", "鈴木 一郎"));
    assert_eq!(identity.groups, ["sales-approvers", "cafeteria"]);
    assert_eq!(identity.issuer, provider.issuer);
    assert!(identity.auth_time.is_some(), "when the person authenticated");
    assert!(matches!(client.finish(&pending, &code, &state).await, Err(OidcProblem::Code(_))), "a code works once");

    let (authorize, pending) = client.begin("/", None).await.unwrap();
    let back = sign_in_at_provider(&authorize, "suzuki", REDIRECT).await;
    let (code, _) = code_and_state(&back);
    assert!(matches!(client.finish(&pending, &code, "forged").await, Err(OidcProblem::WrongState)));
    let mut wrong_nonce = pending.clone();
    wrong_nonce.nonce = "another-nonce".into();
    let (_, state) = code_and_state(&back);
    assert!(matches!(client.finish(&wrong_nonce, &code, &state).await, Err(OidcProblem::Token(_))));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_id_token_that_is_forged_expired_or_for_another_sign_in_is_refused() {
    backend::reconciliation::ssrf::install_tls_provider();
    let provider = TestProvider::start(REDIRECT, &[]);
    let client = Provider::new(provider.config(), Some(CLIENT_SECRET.into()), "http://127.0.0.1:9").unwrap();
    let (_, pending) = client.begin("/", None).await.unwrap();
    let now = Utc::now();
    let valid = provider.sign("suzuki", &pending.nonce, now, now + Duration::minutes(5));
    assert_eq!(client.verify(&valid, &pending.nonce).await.unwrap().subject, "suzuki", "signed by the provider");

    let expired = provider.sign("suzuki", &pending.nonce, now - Duration::hours(2), now - Duration::hours(1));
    assert!(matches!(client.verify(&expired, &pending.nonce).await, Err(OidcProblem::Token(_))), "expired");
    assert!(matches!(client.verify(&valid, "another-nonce").await, Err(OidcProblem::Token(_))), "another sign-in");
    // Someone else's name in the payload under the provider's signature of the original.
    let mut parts: Vec<String> = valid.to_string().split('.').map(str::to_string).collect();
    let payload = String::from_utf8(URL_SAFE_NO_PAD.decode(&parts[1]).unwrap()).unwrap();
    parts[1] = URL_SAFE_NO_PAD.encode(payload.replace("\"suzuki\"", "\"kanrisha\""));
    let forged: CoreIdToken = parts.join(".").parse().unwrap();
    assert!(matches!(client.verify(&forged, &pending.nonce).await, Err(OidcProblem::Token(_))), "forged");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fresh_sign_in_whose_id_token_has_no_auth_time_is_not_fresh_and_the_page_names_the_claim() {
    backend::reconciliation::ssrf::install_tls_provider();
    let provider = TestProvider::start(REDIRECT, &[]);
    let client = Provider::new(provider.config(), Some(CLIENT_SECRET.into()), "http://127.0.0.1:9").unwrap();
    let asked = Utc::now();
    let (authorize, pending) = client.begin("/approvals", Some(asked)).await.unwrap();
    assert!(authorize.contains("max_age=0") && authorize.contains("prompt=login"), "{authorize}");

    // What Microsoft Entra ID sends unless the optional claim is configured: a valid token without auth_time,
    // as a live single sign-on session would send the person straight back.
    let token = provider.sign("suzuki", &pending.nonce, asked, asked + Duration::minutes(5));
    let identity = client.verify(&token, &pending.nonce).await.unwrap();
    assert_eq!(identity.auth_time, None);
    let fresh = domain::identity::provider_sign_in_at(identity.auth_time, pending.fresh_asked_at);
    assert_eq!(fresh, Err(domain::identity::NotFresh::AuthTimeMissing), "never dated now");

    let app = TestApp::spawn().await;
    for (language, words) in [("ja", "auth_time クレーム"), ("en", "auth_time claim")] {
        let url = format!("{}/sign-in?problem=auth_time_missing", app.url);
        let answer = app.http.get(url).header("cookie", format!("lang={language}")).send().await.unwrap();
        let page = answer.text().await.unwrap();
        assert!(page.contains(words), "{language}: the page says which claim is missing");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn decisions_that_ask_for_a_second_factor_take_a_fresh_sign_in_only_with_it_and_ask_the_provider_for_it() {
    use backend::Clock;
    use domain::approval::Decision;
    use domain::identity::{AuthMethod, Authentication, DecisionStrength};
    backend::reconciliation::ssrf::install_tls_provider();
    let provider = TestProvider::start(REDIRECT, &[]);
    let mut config = provider.config();
    config.decision = DecisionStrength { acr_values: vec!["urn:mfa".into()], amr: vec!["mfa".into()] };
    let client = Provider::new(config.clone(), Some(CLIENT_SECRET.into()), "http://127.0.0.1:9").unwrap();
    let (authorize, _) = client.begin("/approvals", Some(Utc::now())).await.unwrap();
    assert!(authorize.contains("acr_values=urn%3Amfa"), "{authorize}");

    let mut app_config = example_config();
    app_config.sign_in.oidc = Some(config);
    let app = TestApp::spawn_configured(|_| {}, app_config).await;
    app.user("sato", &["staff"], &["sales"]).await;
    app.user("suzuki", &["manager"], &["sales"]).await;
    let token = app.token("intake", &["sales"]).await;
    let id = pending_request(&app, &token, &caller(&app, "sato").await, "ORD-MFA").await;
    let signed_in = |amr: &[&str]| {
        let amr = amr.iter().map(|m| m.to_string()).collect();
        Some(Authentication { at: app.clock.now(), method: AuthMethod::Provider { amr, acr: Some("urn:mfa".into()) } })
    };
    let decide = backend::services::approvals::decide;
    let mut suzuki = caller(&app, "suzuki").await;
    suzuki.authentication = signed_in(&["pwd"]);
    let with_password = decide(&app.state, &suzuki, &id, Decision::Approve, "").await;
    assert!(matches!(with_password, Err(contract::AppError::SignInAgain)), "{with_password:?}");
    suzuki.authentication = signed_in(&["pwd", "mfa"]);
    decide(&app.state, &suzuki, &id, Decision::Approve, "").await.unwrap();
    let approved = app.audit_after("rerun_request.approved").await;
    assert_eq!(approved[0]["authenticated"]["method"]["amr"], json!(["pwd", "mfa"]), "recorded with the decision");
    assert_eq!(approved[0]["authenticated"]["method"]["acr"], "urn:mfa");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_provider_whose_issuer_is_not_the_configured_one_is_refused() {
    backend::reconciliation::ssrf::install_tls_provider();
    let provider = TestProvider::start(REDIRECT, &[]);
    let mut config = provider.config();
    config.issuer = provider.issuer.replace("127.0.0.1", "localhost");
    let client = Provider::new(config, Some(CLIENT_SECRET.into()), "http://127.0.0.1:9").unwrap();
    assert!(matches!(client.begin("/", None).await, Err(OidcProblem::Provider(_))));
}

/// The app with the test provider as its company sign-in (and its example configuration otherwise).
async fn app_with_provider(accounts: &[Account<'_>]) -> (TestApp, TestProvider) {
    let mut provider = None;
    let app = TestApp::spawn_knowing_url(
        |_| {},
        |url| {
            let started = TestProvider::start_with_sign_out(
                &format!("{url}/sign-in/oidc/callback"),
                &format!("{url}/sign-in"),
                accounts,
            );
            let mut config = example_config();
            config.sign_in.oidc = Some(started.config());
            provider = Some(started);
            config
        },
    )
    .await;
    // The provider dates sign-ins by the real clock; the app's clock starts there too.
    app.clock.set(chrono::Utc::now());
    (app, provider.expect("the provider started"))
}

/// One step of a browser at the app: the answer's status, where it sends the browser, and its session cookie.
async fn visit(app: &TestApp, path_or_url: &str, cookie: Option<&str>) -> (StatusCode, String, Option<String>) {
    let url =
        if path_or_url.starts_with("http") { path_or_url.to_string() } else { format!("{}{path_or_url}", app.url) };
    let mut request = app.http.get(url);
    if let Some(cookie) = cookie {
        request = request.header("cookie", cookie);
    }
    let answer = request.send().await.unwrap();
    let location = answer.headers().get("location").map(|l| l.to_str().unwrap().to_string()).unwrap_or_default();
    let cookie = answer
        .headers()
        .get_all("set-cookie")
        .iter()
        .map(|v| v.to_str().unwrap())
        .find(|c| c.starts_with("rerun_gate_session="))
        .map(|c| c.split(';').next().unwrap().to_string());
    (answer.status(), location, cookie)
}

/// A browser signing `login` in through the company sign-in from `start` (`/sign-in/oidc?…` or
/// `/sign-in/again?…`): where the app sends it at the end, and its session cookie then.
async fn sign_in_through_provider(app: &TestApp, start: &str, login: &str, cookie: Option<&str>) -> (String, String) {
    let mut cookie = cookie.map(str::to_string);
    let mut next = start.to_string();
    // The app's own redirects, until it sends the browser to the provider.
    while next.starts_with('/') {
        let (status, location, set) = visit(app, &next, cookie.as_deref()).await;
        assert_eq!(status, StatusCode::SEE_OTHER, "{next}");
        cookie = set.or(cookie);
        next = location;
    }
    let callback = format!("{}/sign-in/oidc/callback", app.url);
    let back = sign_in_at_provider(&next, login, &callback).await;
    let (status, location, set) = visit(app, back.as_str(), cookie.as_deref()).await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    (location, set.or(cookie).expect("a session"))
}

async fn me(app: &TestApp, cookie: &str) -> Answer {
    app.call("me", &[], Some(cookie)).await
}

async fn audit(app: &TestApp) -> Vec<domain::audit::AuditEvent> {
    let mut tx = app.db().begin_read().await.unwrap();
    backend::db::audit::page_after(&mut tx, 0, 10_000).await.unwrap()
}

async fn admin(app: &TestApp) -> String {
    app.user("kanrisha", &["admin"], &[]).await;
    app.sign_in("kanrisha", PASSWORD).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_first_company_sign_in_creates_the_user_with_the_roles_their_groups_give_and_returns_them() {
    let (app, provider) = app_with_provider(&[("suzuki", "鈴木 一郎", &["sales-approvers", "cafeteria"])]).await;
    let (returned_to, cookie) = sign_in_through_provider(&app, "/sign-in/oidc?next=%2Fapprovals", "suzuki", None).await;
    assert_eq!(returned_to, "/approvals");
    let me = me(&app, &cookie).await.json();
    assert_eq!((me["username"].as_str(), me["display_name"].as_str()), (Some("suzuki"), Some("鈴木 一郎")));
    assert_eq!(me["roles"], json!(["manager"]));
    assert_eq!(me["departments"][0]["code"], "sales");

    let events = audit(&app).await;
    let created = events.iter().find(|e| e.action == "user.created").expect("the user was created");
    assert_eq!(created.actor_label, "identity-provider");
    assert!(created.after_json.as_deref().unwrap().contains(&provider.issuer));
    let signed_in = events.iter().rfind(|e| e.action == "sign_in.succeeded").expect("the sign-in");
    assert!(signed_in.after_json.as_deref().unwrap().contains("auth_time"), "{:?}", signed_in.after_json);

    let users = app.call("admin/list_users", &[], Some(&admin(&app).await)).await.json();
    let suzuki = users.as_array().unwrap().iter().find(|u| u["username"] == "suzuki").unwrap();
    assert_eq!(suzuki["source"], "company", "the admin page shows who comes from the provider");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn groups_that_make_someone_staff_of_one_department_and_manager_of_another_decide_only_in_the_second() {
    let (app, _provider) = app_with_provider(&[
        ("yamada", "山田 花", &["sales-staff", "billing-approvers"]),
        ("kimura", "木村 拓", &["billing-staff", "sales-approvers"]),
    ])
    .await;
    app.user("sato", &["staff"], &["sales"]).await;
    let token = app.token("intake", &["sales"]).await;
    let request = pending_request(&app, &token, &caller(&app, "sato").await, "ORD-G1").await;
    app.clock.set(chrono::Utc::now()); // the provider dates the sign-in by the real clock
    let (_, yamada) = sign_in_through_provider(&app, "/sign-in/oidc", "yamada", None).await;
    let me = me(&app, &yamada).await.json();
    let expected = json!([{"department": "billing", "role": "manager"}, {"department": "sales", "role": "staff"}]);
    assert_eq!(me["memberships"], expected, "each mapping's own pairs, never crossed");

    let decide = [("id", request.as_str()), ("approve", "true"), ("comment", "")];
    let as_staff = app.call("approvals/decide", &decide, Some(&yamada)).await;
    assert_eq!(as_staff.status, StatusCode::FORBIDDEN, "only staff of sales: {}", as_staff.body);
    let (_, kimura) = sign_in_through_provider(&app, "/sign-in/oidc", "kimura", None).await;
    let as_manager = app.call("approvals/decide", &decide, Some(&kimura)).await;
    assert_eq!(as_manager.status, StatusCode::OK, "a manager of sales: {}", as_manager.body);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn changed_groups_change_the_roles_and_groups_that_map_to_nothing_are_refused_and_end_the_sessions() {
    let (app, provider) = app_with_provider(&[("tanaka", "田中 花子", &["sales-approvers"])]).await;
    let (_, first) = sign_in_through_provider(&app, "/sign-in/oidc?next=%2F", "tanaka", None).await;
    assert_eq!(me(&app, &first).await.json()["roles"], json!(["manager"]));

    provider.set_accounts(&[("tanaka", "田中 花子", &["billing-staff"])]);
    let (_, second) = sign_in_through_provider(&app, "/sign-in/oidc?next=%2F", "tanaka", None).await;
    let now = me(&app, &second).await.json();
    assert_eq!((now["roles"].clone(), now["departments"][0]["code"].clone()), (json!(["staff"]), json!("billing")));
    let changed = audit(&app).await.into_iter().rfind(|e| e.action == "user.roles_changed").expect("audited");
    assert_eq!(changed.actor_label, "identity-provider");
    assert!(
        changed.before_json.as_deref().unwrap().contains("manager")
            && changed.after_json.as_deref().unwrap().contains("staff")
    );
    assert_eq!(me(&app, &first).await.json()["roles"], json!(["staff"]), "the older session follows the change");

    provider.set_accounts(&[("tanaka", "田中 花子", &["cafeteria"])]);
    let (refused, _) = sign_in_through_provider(&app, "/sign-in/oidc?next=%2F", "tanaka", None).await;
    assert_eq!(refused, "/sign-in?problem=no_role");
    for cookie in [&first, &second] {
        assert_eq!(me(&app, cookie).await.status, StatusCode::UNAUTHORIZED, "every session of theirs ended");
    }
    assert_eq!(audit(&app).await.last().unwrap().action, "sign_in.failed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_decision_older_than_the_window_sends_the_person_through_the_provider_again_and_records_how() {
    let (app, provider) = app_with_provider(&[("suzuki", "鈴木 一郎", &["sales-approvers"])]).await;
    app.user("sato", &["staff"], &["sales"]).await;
    let token = app.token("intake", &["sales"]).await;
    let sato = caller(&app, "sato").await;
    let id = pending_request(&app, &token, &sato, "ORD-5001").await;
    let (_, cookie) = sign_in_through_provider(&app, "/sign-in/oidc?next=%2Fapprovals", "suzuki", None).await;

    app.clock.advance(chrono::Duration::minutes(11));
    let decide = [("id", id.as_str()), ("approve", "true"), ("comment", "")];
    let stale = app.call("approvals/decide", &decide, Some(&cookie)).await;
    assert_eq!(stale.status, StatusCode::UNAUTHORIZED);
    assert_eq!(stale.json(), json!("SignInAgain"));

    // The page sends the browser to /sign-in/again, which asks the provider for a sign-in now (max_age=0).
    let page = format!("/reruns/{id}");
    let again = format!("/sign-in/again?next={}", domain::identity::query_value(&page));
    let (status, location, _) = visit(&app, &again, Some(&cookie)).await;
    assert_eq!((status, location.starts_with("/sign-in/oidc?fresh=true&next=")), (StatusCode::SEE_OTHER, true));
    let (_, at_provider, _) = visit(&app, &location, Some(&cookie)).await;
    assert!(at_provider.starts_with(&provider.issuer) && at_provider.contains("max_age=0"), "{at_provider}");
    app.clock.set(chrono::Utc::now());
    let (returned_to, fresh) = sign_in_through_provider(&app, &again, "suzuki", Some(&cookie)).await;
    assert_eq!(returned_to, page, "back to the decision");
    assert_eq!(app.call("approvals/decide", &decide, Some(&fresh)).await.status, StatusCode::OK);

    let approved = audit(&app).await.into_iter().rfind(|e| e.action == "rerun_request.approved").unwrap();
    let after: serde_json::Value = serde_json::from_str(approved.after_json.as_deref().unwrap()).unwrap();
    assert_eq!(after["authenticated"]["method"]["kind"], "provider", "{after}");
    assert!(after["authenticated"]["at"].is_string());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_local_account_s_stale_decision_asks_for_the_password_again() {
    let app = TestApp::spawn().await;
    app.user("sato", &["staff"], &["sales"]).await;
    app.user("suzuki", &["manager"], &["sales"]).await;
    let token = app.token("intake", &["sales"]).await;
    let id = pending_request(&app, &token, &caller(&app, "sato").await, "ORD-5002").await;
    let cookie = app.sign_in("suzuki", PASSWORD).await;
    app.clock.advance(chrono::Duration::minutes(11));
    let decide = [("id", id.as_str()), ("approve", "true"), ("comment", "")];
    assert_eq!(app.call("approvals/decide", &decide, Some(&cookie)).await.json(), json!("SignInAgain"));
    // The page sends the browser to /sign-in/again, which returns it to the page it came from (this site's only).
    for (referrer, back_to) in
        [(format!("{}/approvals", app.url), "%2Fapprovals"), ("https://evil.example/x".into(), "%2F")]
    {
        let answer = app
            .http
            .get(format!("{}/sign-in/again", app.url))
            .header("cookie", &cookie)
            .header("referer", referrer)
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), StatusCode::SEE_OTHER);
        // The same person signs in: their sign-in name is filled in, the password is asked for.
        let location = format!("/sign-in?again=true&username=suzuki&next={back_to}");
        assert_eq!(answer.headers()["location"], location.as_str());
        let page = app.http.get(format!("{}{location}", app.url)).send().await.unwrap().text().await.unwrap();
        assert!(page.contains(r#"value="suzuki""#), "{page}");
    }
    let again = app.sign_in("suzuki", PASSWORD).await;
    assert_eq!(app.call("approvals/decide", &decide, Some(&again)).await.status, StatusCode::OK);
    let approved = audit(&app).await.into_iter().rfind(|e| e.action == "rerun_request.approved").unwrap();
    assert!(
        approved.after_json.as_deref().unwrap().contains(r#""method":{"kind":"password"}"#),
        "{:?}",
        approved.after_json
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_company_sign_in_only_the_break_glass_admin_keeps_a_password() {
    let (app, _provider) = {
        let mut provider = None;
        let app = TestApp::spawn_knowing_url(
            |_| {},
            |url| {
                let started = TestProvider::start(&format!("{url}/sign-in/oidc/callback"), &[]);
                let mut config = example_config();
                config.sign_in.oidc = Some(started.config());
                config.sign_in.local_passwords = domain::configuration::LocalPasswords::BreakGlass;
                config.sign_in.break_glass_users = vec!["kanrisha".into()];
                provider = Some(started);
                config
            },
        )
        .await;
        (app, provider.unwrap())
    };
    app.user("kanrisha", &["admin"], &[]).await;
    app.user("sato", &["staff"], &["sales"]).await;
    app.sign_in("kanrisha", PASSWORD).await;
    let refused = app.call("sign_in", &[("username", "sato"), ("password", PASSWORD)], None).await;
    assert_eq!(refused.status, StatusCode::UNPROCESSABLE_ENTITY, "as a wrong password would: {}", refused.body);
    let page = app.http.get(format!("{}/sign-in?next=%2Fapprovals", app.url)).send().await.unwrap();
    let page = page.text().await.unwrap();
    assert!(page.contains(r#"href="/sign-in/oidc?next=%2Fapprovals""#), "the provider's button is offered");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn signing_out_sends_a_company_account_to_the_provider_s_end_session_page() {
    let (app, provider) = app_with_provider(&[("suzuki", "鈴木 一郎", &["sales-approvers"])]).await;
    let (_, cookie) = sign_in_through_provider(&app, "/sign-in/oidc?next=%2F", "suzuki", None).await;
    let then = app.call("sign_out", &[], Some(&cookie)).await.json();
    let then = then.as_str().expect("the provider's end-session URL");
    assert!(then.starts_with(&provider.issuer), "{then}");
    assert!(then.contains(&format!(
        "post_logout_redirect_uri={}",
        domain::identity::query_value(&format!("{}/sign-in", app.url))
    )));
    assert_eq!(me(&app, &cookie).await.status, StatusCode::UNAUTHORIZED);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_decision_needs_a_recent_sign_in_approving_rejecting_stopping_resuming_and_administering_users() {
    use backend::services::{approvals, batches, stop_switch, users};
    use domain::stop_switch::Scope;
    let app = TestApp::spawn().await;
    app.user("suzuki", &["manager"], &["sales"]).await;
    let sato = app.user("sato", &["staff"], &["sales"]).await;
    app.user("kanrisha", &["admin"], &[]).await;
    let (owner, admin) = (caller(&app, "suzuki").await, caller(&app, "kanrisha").await);
    app.clock.advance(chrono::Duration::minutes(11));
    let stale = |result: Result<(), contract::AppError>| matches!(result, Err(contract::AppError::SignInAgain));
    let approve = domain::approval::Decision::Approve;
    assert!(stale(approvals::decide(&app.state, &owner, "any", approve, "").await));
    assert!(stale(batches::decide(&app.state, &owner, "any", false, "根拠不足").await));
    assert!(stale(stop_switch::pause(&app.state, &owner, Scope::Workflow, "order-intake", "止める").await));
    assert!(stale(stop_switch::resume(&app.state, &owner, Scope::Workflow, "order-intake", "再開").await));
    assert!(stale(users::set_disabled(&app.state, &admin, sato, true).await));
    assert!(stale(
        users::set_access(&app.state, &admin, sato, vec![Role::Manager], vec!["sales".into()], vec![]).await
    ));
    let new = contract::admin::NewUser {
        username: "yamada".into(),
        display_name: "山田".into(),
        password: PASSWORD.into(),
        roles: vec![Role::Staff],
        departments: vec!["sales".into()],
        memberships: Vec::new(),
        email: String::new(),
    };
    assert!(matches!(users::add_by_admin(&app.state, &admin, new).await, Err(contract::AppError::SignInAgain)));
    let admin = caller(&app, "kanrisha").await;
    users::set_disabled(&app.state, &admin, sato, true).await.expect("signed in just now");
}
