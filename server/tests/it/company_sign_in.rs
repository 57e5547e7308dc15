//! Company sign-in against a real OpenID Connect provider: `oidc-provider` (npm, OpenID Certified), started by
//! scripts/oidc-provider/provider.mjs on a free loopback port with test users and groups.
use app::backend::oidc::{OidcProblem, Provider};
use app::domain::configuration::OidcConfig;
use app::domain::identity::GroupMapping;
use app::domain::roles::Role;
use std::process::{Child, Command, Stdio};

pub const CLIENT_ID: &str = "rerun-gate";
pub const CLIENT_SECRET: &str = "test-client-secret-5e1f";

/// The provider process, its issuer URL and the file of its accounts; stopped when dropped.
pub struct TestProvider {
    child: Child,
    pub issuer: String,
    pub accounts: std::path::PathBuf,
}

impl TestProvider {
    /// `redirect` is the app's callback URL; the accounts are `(login, name, groups)`.
    pub fn start(redirect: &str, accounts: &[(&str, &str, &[&str])]) -> TestProvider {
        use std::io::BufRead;
        let file = std::env::temp_dir().join(format!("oidc-accounts-{}.json", uuid::Uuid::new_v4().simple()));
        TestProvider::write(&file, accounts);
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../scripts/oidc-provider/provider.mjs");
        let mut child = Command::new("node")
            .args([script, file.to_str().unwrap(), CLIENT_ID, CLIENT_SECRET, redirect])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("node runs the test identity provider (make deps-test installs it)");
        let mut ready = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap()).read_line(&mut ready).unwrap();
        let issuer = ready.trim().strip_prefix("listening on ").expect("the provider says its issuer").to_string();
        TestProvider { child, issuer, accounts: file }
    }

    fn write(file: &std::path::Path, accounts: &[(&str, &str, &[&str])]) {
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
            groups: vec![GroupMapping {
                group: "sales-approvers".into(),
                roles: vec![Role::Manager],
                departments: vec!["sales".into()],
            }],
        }
    }
}

impl Drop for TestProvider {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_file(&self.accounts);
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
    app::backend::reconciliation::ssrf::install_tls_provider();
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
async fn a_provider_whose_issuer_is_not_the_configured_one_is_refused() {
    app::backend::reconciliation::ssrf::install_tls_provider();
    let provider = TestProvider::start(REDIRECT, &[]);
    let mut config = provider.config();
    config.issuer = provider.issuer.replace("127.0.0.1", "localhost");
    let client = Provider::new(config, Some(CLIENT_SECRET.into()), "http://127.0.0.1:9").unwrap();
    assert!(matches!(client.begin("/", None).await, Err(OidcProblem::Provider(_))));
}
