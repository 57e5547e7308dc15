//! The company directory (SCIM 2.0): people and groups provisioned with the bodies Entra ID and Okta send
//! (`scim/*.json`, each from the vendor's documentation), groups mapped by the company sign-in's table, and a
//! person removed at the directory losing everything at once.
use crate::fixtures::{caller, pending_request};
use crate::harness::{TestApp, example_config};
use domain::approval::Decision;
use domain::roles::Role;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

/// `config` with a company sign-in whose table maps `sales-approvers` to managers and `sales-staff` to staff of
/// sales (the directory's groups map through it).
pub fn with_directory(mut config: backend::config::Config) -> backend::config::Config {
    let groups = [("sales-approvers", Role::Manager), ("sales-staff", Role::Staff)];
    config.sign_in.oidc = Some(crate::fixtures::company_sign_in("https://login.example.jp", &groups));
    config
}

/// The directory's token, as `server scim token create --name entra` makes it.
pub async fn directory_token(app: &TestApp) -> String {
    let actor = domain::audit::Actor::system(domain::audit::SystemActor::CommandLine);
    backend::services::api_clients::create_directory(&app.state, actor, "entra").await.unwrap().1
}

/// The app with the directory, and `approvals` approvals needed.
async fn app_with_directory(approvals: u32) -> (TestApp, String) {
    let mut config = with_directory(example_config());
    config.workflows.iter_mut().for_each(|w| w.approvals_required = approvals);
    let app = TestApp::spawn_configured(|_| {}, config).await;
    let token = directory_token(&app).await;
    (app, token)
}

/// A person provisioned by the directory into `group`; their ID there.
pub async fn provisioned(app: &TestApp, token: &str, user_name: &str, group: &str) -> String {
    let person = json!({"schemas": ["urn:ietf:params:scim:schemas:core:2.0:User"], "userName": user_name});
    let id = created(app, token, "/Users", &person).await;
    let group = json!({"schemas": ["urn:ietf:params:scim:schemas:core:2.0:Group"], "displayName": group,
        "members": [{"value": id}]});
    created(app, token, "/Groups", &group).await;
    id
}

/// A fixture's request body, its placeholders filled.
fn fixture(name: &str, fill: &[(&str, &str)]) -> Value {
    let path = format!("{}/tests/it/scim/{name}.json", env!("CARGO_MANIFEST_DIR"));
    let mut text = std::fs::read_to_string(path).unwrap();
    for (placeholder, value) in fill {
        text = text.replace(placeholder, value);
    }
    serde_json::from_str::<Value>(&text).unwrap()["body"].clone()
}

pub async fn scim(app: &TestApp, token: &str, method: Method, path: &str, body: Option<&Value>) -> (StatusCode, Value) {
    let mut request = app.http.request(method, format!("{}/scim/v2{path}", app.url)).bearer_auth(token);
    if let Some(body) = body {
        request = request.header("content-type", "application/scim+json").body(body.to_string());
    }
    let response = request.send().await.unwrap();
    let status = response.status();
    let text = response.text().await.unwrap();
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

async fn created(app: &TestApp, token: &str, path: &str, body: &Value) -> String {
    let (status, answer) = scim(app, token, Method::POST, path, Some(body)).await;
    assert_eq!(status, StatusCode::CREATED, "{answer}");
    answer["id"].as_str().unwrap().to_string()
}

async fn memberships(app: &TestApp, username: &str) -> Vec<String> {
    let person = caller(app, username).await.person();
    person.access.memberships.iter().map(|m| format!("{}:{}", m.department, m.role)).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn entra_s_own_requests_provision_a_person_whose_group_makes_them_a_manager_and_whose_disable_ends_it() {
    let (app, token) = app_with_directory(1).await;
    let user = created(&app, &token, "/Users", &fixture("entra-create-user", &[])).await;
    let group = created(&app, &token, "/Groups", &fixture("entra-create-group", &[])).await;
    let add = fixture("entra-patch-group-add-member", &[("{user_id}", &user)]);
    let (status, answer) = scim(&app, &token, Method::PATCH, &format!("/Groups/{group}"), Some(&add)).await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    let username = scim(&app, &token, Method::GET, &format!("/Users/{user}"), None).await.1["userName"].clone();
    let username = username.as_str().unwrap();
    assert_eq!(memberships(&app, username).await, vec!["sales:manager"]);

    let replace = fixture("entra-patch-user-replace", &[]);
    let (status, person) = scim(&app, &token, Method::PATCH, &format!("/Users/{user}"), Some(&replace)).await;
    assert_eq!(status, StatusCode::OK, "{person}");
    assert_eq!(person["displayName"], "Kenji Tanaka");
    assert_eq!(person["urn:ietf:params:scim:schemas:extension:enterprise:2.0:User"]["employeeNumber"], "100482");
    assert_eq!(person["groups"][0]["value"], group);

    let disable = fixture("entra-patch-user-disable", &[]);
    let (status, person) = scim(&app, &token, Method::PATCH, &format!("/Users/{user}"), Some(&disable)).await;
    assert_eq!(status, StatusCode::OK, "{person}");
    assert_eq!(person["active"], false, "Entra's \"False\" is false");
    let remove = fixture("entra-patch-group-remove-member", &[("{user_id}", &user)]);
    scim(&app, &token, Method::PATCH, &format!("/Groups/{group}"), Some(&remove)).await;
    assert!(memberships(&app, username).await.is_empty(), "leaving the group removes what it gave");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn okta_s_own_requests_provision_replace_and_deactivate_a_person() {
    let (app, token) = app_with_directory(1).await;
    let user = created(&app, &token, "/Users", &fixture("okta-create-user", &[])).await;
    let (_, person) = scim(&app, &token, Method::GET, &format!("/Users/{user}"), None).await;
    assert!(person.get("password").is_none(), "a password sent is never kept nor answered");
    let group = created(&app, &token, "/Groups", &fixture("okta-create-group", &[])).await;
    let add = fixture("okta-patch-group-members-add", &[("{user_id}", &user), ("{group_id}", &group)]);
    let (status, answer) = scim(&app, &token, Method::PATCH, &format!("/Groups/{group}"), Some(&add)).await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    let username = person["userName"].as_str().unwrap().to_string();
    assert_eq!(memberships(&app, &username).await, vec!["sales:staff"]);
    let external = person["externalId"].as_str().unwrap();
    let by_external = format!("/Users?filter=externalId%20eq%20%22{external}%22");
    assert_eq!(scim(&app, &token, Method::GET, &by_external, None).await.1["totalResults"], 1);
    let other_case = format!("/Users?filter=externalId%20eq%20%22{}%22", external.to_uppercase());
    assert_eq!(scim(&app, &token, Method::GET, &other_case, None).await.1["totalResults"], 0, "externalId exactly");
    let put = fixture("okta-put-user", &[("{user_id}", &user)]);
    let (status, answer) = scim(&app, &token, Method::PUT, &format!("/Users/{user}"), Some(&put)).await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    let filter = format!("/Users?filter=userName%20eq%20%22{}%22&startIndex=1&count=100", urlencode(&username));
    let (status, list) = scim(&app, &token, Method::GET, &filter, None).await;
    assert_eq!((status, list["totalResults"].clone()), (StatusCode::OK, json!(1)), "{list}");
    let upper = format!("/Users?filter=userName%20eq%20%22{}%22", urlencode(&username.to_uppercase()));
    assert_eq!(scim(&app, &token, Method::GET, &upper, None).await.1["totalResults"], 1, "a sign-in name in any case");
    let deactivate = fixture("okta-patch-user-deactivate", &[]);
    let (_, person) = scim(&app, &token, Method::PATCH, &format!("/Users/{user}"), Some(&deactivate)).await;
    assert_eq!(person["active"], false);
}

fn urlencode(text: &str) -> String {
    text.replace('@', "%40")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_manager_removed_at_the_directory_while_a_request_waits_for_his_second_approval_loses_everything_at_once() {
    let (app, token) = app_with_directory(2).await;
    let api = app.token("order-system", &["sales"]).await;
    app.user("sato", &["staff"], &["sales"]).await;
    app.user("kato", &["manager"], &["sales"]).await;
    let body =
        json!({"schemas": ["urn:ietf:params:scim:schemas:core:2.0:User"], "userName": "tanaka", "displayName": "田中"});
    let tanaka = created(&app, &token, "/Users", &body).await;
    let group = json!({"schemas": ["urn:ietf:params:scim:schemas:core:2.0:Group"], "displayName": "sales-approvers",
        "members": [{"value": tanaka}]});
    created(&app, &token, "/Groups", &group).await;
    let staff = caller(&app, "sato").await;
    let request = pending_request(&app, &api, &staff, "ORD-7001").await;
    let manager = caller(&app, "tanaka").await;
    backend::services::approvals::decide(&app.state, &manager, &request, Decision::Approve, "").await.unwrap();
    let who = domain::chat::ChatUser {
        platform: domain::chat::ChatPlatform::Slack,
        team_id: "T1".into(),
        user_id: "U1".into(),
    };
    backend::services::chat::link(&app.state, &manager, &who).await.unwrap();

    let (status, _) = scim(&app, &token, Method::DELETE, &format!("/Users/{tanaka}"), None).await;
    assert_eq!(status, StatusCode::NO_CONTENT);

    let (status, _) = scim(&app, &token, Method::GET, &format!("/Users/{tanaka}"), None).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "the directory no longer sees him");
    let view = backend::services::rerun_requests::view(&app.state, &staff, &request).await.unwrap();
    assert!(view.decisions[0].no_longer_counts, "his approval no longer counts");
    let kato = caller(&app, "kato").await;
    backend::services::approvals::decide(&app.state, &kato, &request, Decision::Approve, "").await.unwrap();
    let view = backend::services::rerun_requests::view(&app.state, &staff, &request).await.unwrap();
    assert_eq!(view.status.as_str(), "pending_approval", "one approval that counts of two: it still waits");
    let mut tx = app.db().begin_read().await.unwrap();
    let row = backend::db::users::by_username(&mut tx, "tanaka").await.unwrap().unwrap();
    assert!(row.disabled_at.is_some());
    assert!(backend::db::chat::of_user(&mut tx, row.id).await.unwrap().is_empty(), "his chat link ended");
    let events = backend::db::audit::page_after(&mut tx, 0, 10_000).await.unwrap();
    drop(tx);
    let voided = events.iter().find(|e| e.action == "rerun_request.approval_voided").expect("the approval voided");
    assert_eq!(voided.actor_label, "entra", "the trail names the directory's token that removed him");
    for action in ["user.deleted", "user.chat_unlinked", "user.roles_changed"] {
        assert!(events.iter().any(|e| e.action == action && e.actor_label == "entra"), "{action}");
    }
}

/// Finding 4 of the hardening round: a 90-byte filter nested 20 deep froze the server (27 s of parsing; inside a
/// PATCH's value path it held every write). Two such calls at once now come back refused while the server goes on
/// answering, and the PATCH is refused before it waits for the writer, storing nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_filter_nested_to_freeze_the_parser_is_refused_at_once_in_a_search_and_in_a_patch() {
    let (app, token) = app_with_directory(1).await;
    let id = provisioned(&app, &token, "nakamura", "sales-staff").await;
    let nested = format!("{}userName eq \"a\"{}", "(".repeat(20), ")".repeat(20));
    let search = format!("/Users?filter={}", urlencoding(&nested));
    let patch = json!({"schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
        "Operations": [{"op": "remove", "path": format!("emails[{nested}]")}]});
    let path = format!("/Users/{id}");
    let attacks = async {
        tokio::join!(
            scim(&app, &token, Method::GET, &search, None),
            scim(&app, &token, Method::PATCH, &path, Some(&patch)),
            async { app.http.get(format!("{}/healthz", app.url)).send().await.unwrap().status() }
        )
    };
    let (searched, patched, health) =
        tokio::time::timeout(std::time::Duration::from_secs(10), attacks).await.expect("answered, not frozen");
    for (status, answer) in [searched, patched] {
        assert_eq!((status.as_u16(), &answer["scimType"]), (400, &json!("invalidFilter")), "{answer}");
    }
    assert!(health.is_success());
    let (_, person) = scim(&app, &token, Method::GET, &path, None).await;
    assert_eq!(person["userName"], "nakamura", "nothing stored");
}

fn urlencoding(text: &str) -> String {
    text.bytes()
        .map(|b| if b.is_ascii_alphanumeric() { (b as char).to_string() } else { format!("%{b:02X}") })
        .collect()
}

/// Finding 7 of the hardening round: `ADMIN` and `Admin` + U+200B were provisioned beside the local `admin`. A
/// sign-in name is now unique in the form people mean it (NFKC, any case, no invisible characters), against
/// local accounts and the directory's own, at provisioning, at a rename and when an admin adds someone; the
/// directory's name is stored in its plain form; rows from before get their key at start.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sign_in_name_is_unique_whatever_its_case_width_or_invisible_characters() {
    let (app, token) = app_with_directory(1).await;
    app.user("admin", &["admin"], &[]).await;
    let user = |name: &str| json!({"schemas": ["urn:ietf:params:scim:schemas:core:2.0:User"], "userName": name});
    for name in ["ADMIN", "Admin\u{200B}", "ａｄｍｉｎ", "\u{FEFF}admin"] {
        let (status, answer) = scim(&app, &token, Method::POST, "/Users", Some(&user(name))).await;
        assert_eq!((status.as_u16(), &answer["scimType"]), (409, &json!("uniqueness")), "{name:?}: {answer}");
    }
    let boss = created(&app, &token, "/Users", &user("Ｂｏｓｓ\u{200B}.Sato")).await;
    let (_, stored) = scim(&app, &token, Method::GET, &format!("/Users/{boss}"), None).await;
    assert_eq!(stored["userName"], "Boss.Sato", "stored in its plain form, its case kept");
    let (status, _) = scim(&app, &token, Method::POST, "/Users", Some(&user("boss.sato"))).await;
    assert_eq!(status.as_u16(), 409, "the directory's own names too");
    let other = created(&app, &token, "/Users", &user("kimura")).await;
    let rename = json!({"schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
        "Operations": [{"op": "replace", "path": "userName", "value": "BOSS.SATO"}]});
    let (status, answer) = scim(&app, &token, Method::PATCH, &format!("/Users/{other}"), Some(&rename)).await;
    assert_eq!(status.as_u16(), 409, "a rename onto another's name: {answer}");
    let root = caller(&app, "admin").await;
    let new = contract::admin::NewUser {
        username: "boss.sato".into(),
        display_name: "佐藤".into(),
        password: "a long enough passphrase 42".into(),
        roles: vec![Role::Staff],
        departments: vec!["sales".into()],
        memberships: vec![],
        email: String::new(),
    };
    let local = backend::services::users::add_by_admin(&app.state, &root, new).await;
    assert!(matches!(local, Err(contract::AppError::Conflict { .. })), "a local account beside it: {local:?}");

    // A row from before the key was kept gets it at start.
    let id = row_of(&app, "kimura").await;
    let mut tx = app.db().begin_write().await.unwrap();
    let sql = "UPDATE users SET username_key = NULL WHERE id = $1";
    match &mut tx {
        backend::db::Conn::Sqlite(t, _) => sqlx::query(sql).bind(id).execute(&mut **t).await.map(drop).unwrap(),
        backend::db::Conn::Postgres(t, _) => sqlx::query(sql).bind(id).execute(&mut **t).await.map(drop).unwrap(),
    };
    tx.commit().await.unwrap();
    app.db().migrate().await.unwrap();
    let (status, _) = scim(&app, &token, Method::POST, "/Users", Some(&user("KIMURA"))).await;
    assert_eq!(status.as_u16(), 409, "found by the key filled at start");
}

/// The directory's token revoked elsewhere (the command line, another instance: nothing here is told) ends the
/// directory's access at the very next call — its 5 s promise took 4.7–4.9 s under load.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_directory_token_revoked_elsewhere_opens_nothing_from_the_next_call() {
    let (app, token) = app_with_directory(1).await;
    let (status, _) = scim(&app, &token, Method::GET, "/Users", None).await;
    assert_eq!(status, StatusCode::OK);
    let mut tx = app.db().begin_write().await.unwrap();
    let sql = "UPDATE api_clients SET revoked_at = created_at WHERE name = 'entra'";
    match &mut tx {
        backend::db::Conn::Sqlite(t, _) => sqlx::query(sql).execute(&mut **t).await.map(drop).unwrap(),
        backend::db::Conn::Postgres(t, _) => sqlx::query(sql).execute(&mut **t).await.map(drop).unwrap(),
    };
    tx.commit().await.unwrap();
    let (status, _) = scim(&app, &token, Method::GET, "/Users", None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "revoked: not one more call");
}

/// Without a company sign-in the directory has nobody to provision: its token is not created (the command says
/// what to configure), and a token from before answers every call 409 `no-company-sign-in` — never the 404 a
/// directory reads as "no such person" while discovery says Users are supported.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_company_sign_in_the_directory_is_told_what_to_configure() {
    let app = TestApp::spawn().await;
    let actor = domain::audit::Actor::system(domain::audit::SystemActor::CommandLine);
    let refused = backend::services::api_clients::create_directory(&app.state, actor, "entra").await;
    let Err(contract::AppError::Conflict { problem, detail }) = refused else { panic!("{refused:?}") };
    assert_eq!(problem, domain::conflict::Conflict::NoCompanySignIn);
    assert!(detail.contains("[sign_in.oidc]"), "{detail}");

    // A token made while a company sign-in was configured, and the configuration changed since.
    let (app, token) = app_with_directory(1).await;
    let app = app.restarted_with_config(example_config()).await;
    let user = json!({"schemas": ["urn:ietf:params:scim:schemas:core:2.0:User"], "userName": "x"});
    for (method, path, body) in [(Method::POST, "/Users", Some(&user)), (Method::GET, "/Users", None)] {
        let (status, answer) = scim(&app, &token, method, path, body).await;
        assert_eq!(status, StatusCode::CONFLICT, "{answer}");
        assert!(answer["detail"].as_str().unwrap().contains("[sign_in.oidc]"), "{answer}");
    }
    let idle = backend::services::api_clients::report_directory_without_sign_in(&app.state).await.unwrap();
    assert_eq!(idle, 1, "said at start");
}

/// Every group the directory sends is kept, members and all (Entra quarantines an application whose calls mostly
/// fail: 11 of 11 Group checks failed when an unmapped group was refused); it gives roles only while a mapping
/// names it, and a mapping added to the configuration later takes effect at the next start, with no new push.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_group_no_mapping_names_is_kept_and_gives_roles_once_a_mapping_names_it() {
    let (app, token) = app_with_directory(1).await;
    let id = provisioned(&app, &token, "mori", "all-employees").await;
    let (status, group) = scim(&app, &token, Method::GET, "/Groups", None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(group["Resources"][0]["members"][0]["value"], json!(id), "kept with its members: {group}");
    assert!(memberships(&app, "mori").await.is_empty(), "a group no mapping names gives nothing");

    let mut config = with_directory(example_config());
    let oidc = config.sign_in.oidc.as_mut().unwrap();
    oidc.groups.push(domain::identity::GroupMapping {
        group: "all-employees".into(),
        roles: vec![Role::Staff],
        departments: vec!["sales".into()],
    });
    let app = app.restarted_with_config(config).await;
    assert_eq!(memberships(&app, "mori").await, vec!["sales:staff"], "the new mapping, with no new push");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_is_a_scim_error_and_changes_nothing() {
    let (app, token) = app_with_directory(1).await;
    app.user("suzuki", &["staff"], &["sales"]).await;
    let user = |name: &str| json!({"schemas": ["urn:ietf:params:scim:schemas:core:2.0:User"], "userName": name});
    let cases = [
        (Method::POST, "/Users".to_string(), Some(json!({"userName": "x", "shoeSize": 42})), 400, "invalidSyntax"),
        (Method::POST, "/Users".to_string(), Some(user("suzuki")), 409, "uniqueness"),
        (Method::GET, "/Users?filter=userName%20eq".to_string(), None, 400, "invalidFilter"),
        (
            Method::POST,
            "/Groups".to_string(),
            Some(json!({"schemas": ["urn:ietf:params:scim:schemas:core:2.0:Group"], "displayName": " "})),
            400,
            "invalidValue",
        ),
    ];
    for (method, path, body, status, kind) in cases {
        let (got, answer) = scim(&app, &token, method, &path, body.as_ref()).await;
        assert_eq!(got.as_u16(), status, "{path}: {answer}");
        assert_eq!(answer["scimType"], kind, "{path}: {answer}");
        assert_eq!(answer["schemas"][0], "urn:ietf:params:scim:api:messages:2.0:Error");
    }
    let id = created(&app, &token, "/Users", &user("yamada")).await;
    let group = json!({"schemas": ["urn:ietf:params:scim:schemas:core:2.0:Group"], "displayName": "sales-staff",
        "members": [{"value": id}, {"value": "nobody"}]});
    let (status, _) = scim(&app, &token, Method::POST, "/Groups", Some(&group)).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "a member who is nobody here");
    let (_, groups) = scim(&app, &token, Method::GET, "/Groups", None).await;
    assert_eq!(groups["totalResults"], 0, "nothing half-applied");
    assert!(memberships(&app, "yamada").await.is_empty());
    let ingestion = app.token("order-system", &["sales"]).await;
    assert_eq!(scim(&app, &ingestion, Method::GET, "/Users", None).await.0, StatusCode::UNAUTHORIZED);
    let admin = {
        app.user("admin2", &["admin"], &[]).await;
        caller(&app, "admin2").await
    };
    let mut tx = app.db().begin_read().await.unwrap();
    let yamada = backend::db::users::by_username(&mut tx, "yamada").await.unwrap().unwrap().id;
    drop(tx);
    let refused = backend::services::users::set_access(
        &app.state,
        &admin,
        yamada,
        vec![Role::Staff],
        vec!["sales".into()],
        vec![],
    )
    .await
    .unwrap_err();
    assert!(refused.to_string().contains("company directory manages yamada"), "{refused}");
    let listed = backend::services::users::list(&app.state, &admin).await.unwrap();
    let yamada = listed.iter().find(|u| u.username == "yamada").unwrap();
    assert_eq!(yamada.source, domain::directory::UserSource::Directory, "the admin page shows where he comes from");
    assert!(yamada.provisioned_at.is_some(), "and when the directory last changed him");
}

/// Where `make deps-test` installs scim2-tester (pinned).
const SCIM_TESTER_PYTHON: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../target/scim-venv/bin/python");

/// The python-scim project's compliance checker, every check it makes against the User endpoints (discovery,
/// creation, reads with `attributes`/`excludedAttributes`, replacement, PATCH add/replace/remove of every
/// attribute `/Schemas` declares, deletion). Its Group checks are not run: it names its groups with random UUIDs,
/// which no `[[sign_in.oidc.group]]` maps, and a group that maps to nothing is refused here by design (a SCIM
/// error, `bad_input_is_a_scim_error_and_changes_nothing`); the Group endpoints are exercised by the vendors'
/// own bodies above.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scim2_tester_finds_every_user_and_group_check_passing() {
    let (app, token) = app_with_directory(1).await;
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/it/scim_compliance.py");
    let url = format!("{}/scim/v2", app.url);
    let run = tokio::process::Command::new(SCIM_TESTER_PYTHON)
        .args([script, &url, &token, "User", "Group"])
        .output()
        .await
        .expect("scim2-tester is installed (make deps-test)");
    let report = String::from_utf8_lossy(&run.stdout);
    assert!(run.status.success(), "{report}\n{}", String::from_utf8_lossy(&run.stderr));
    assert!(report.contains("[User] object_creation"), "the User checks ran: {report}");
    assert!(report.contains("[Group] object_creation"), "the Group checks ran: {report}");
}

async fn sign_in(
    app: &TestApp,
    who: backend::oidc::Identity,
) -> Result<backend::services::session_users::SessionUser, contract::AppError> {
    backend::services::company_sign_in::sign_in(&app.state, &who, None).await
}

fn identity(subject: &str, username: &str, display_name: &str, object_id: Option<&str>) -> backend::oidc::Identity {
    backend::oidc::Identity {
        issuer: "https://login.example.jp".into(),
        subject: subject.into(),
        username: username.into(),
        display_name: display_name.into(),
        email: None,
        groups: vec!["sales-approvers".into()],
        auth_time: None,
        amr: vec![],
        acr: None,
        team: None,
        entra: object_id.map(|oid| ("tenant-1".to_string(), oid.to_string())),
    }
}

/// A person the directory made inactive who signs in with the company account is told their access was ended
/// (`problem=access_ended` on the sign-in page), not that their account has no role.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_the_directory_made_inactive_is_told_their_access_ended() {
    let (app, token) = app_with_directory(1).await;
    let id = provisioned(&app, &token, "ogawa", "sales-approvers").await;
    sign_in(&app, identity("sub-ogawa", "ogawa", "小川", None)).await.unwrap();
    let inactive = json!({"schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
        "Operations": [{"op": "replace", "path": "active", "value": false}]});
    let (status, _) = scim(&app, &token, Method::PATCH, &format!("/Users/{id}"), Some(&inactive)).await;
    assert_eq!(status, StatusCode::OK);
    let refused = sign_in(&app, identity("sub-ogawa", "ogawa", "小川", None)).await;
    assert!(matches!(refused, Err(contract::AppError::Unauthorized)), "access ended, not no role: {refused:?}");
    assert!(app.audit_after("sign_in.failed").await.iter().any(|e| e["why"] == "the person's access was ended"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_provisioned_person_signs_in_matched_by_external_id_or_user_name_never_by_display_name() {
    let (app, token) = app_with_directory(1).await;
    let person = |user: &str, external: &str| {
        json!({"schemas": ["urn:ietf:params:scim:schemas:core:2.0:User"], "userName": user, "externalId": external,
            "displayName": "田中 健二"})
    };
    let tanaka = created(&app, &token, "/Users", &person("tanaka@example.jp", "oid-tanaka")).await;
    let suzuki = created(&app, &token, "/Users", &person("suzuki@example.jp", "oid-suzuki")).await;
    let staff = json!({"schemas": ["urn:ietf:params:scim:schemas:core:2.0:Group"], "displayName": "sales-staff",
        "members": [{"value": tanaka}, {"value": suzuki}]});
    created(&app, &token, "/Groups", &staff).await;

    // By the sign-in name (any case); the directory's groups decide, not the token's.
    let signed_in = sign_in(&app, identity("sub-1", "Tanaka@Example.jp", "x", None)).await.unwrap();
    assert_eq!(signed_in.user.username, "tanaka@example.jp");
    assert_eq!(memberships(&app, "tanaka@example.jp").await, vec!["sales:staff"]);
    // By Entra's object ID, the directory's externalId, whatever the sign-in name.
    let signed_in = sign_in(&app, identity("sub-2", "s.suzuki", "y", Some("oid-suzuki"))).await.unwrap();
    assert_eq!(signed_in.user.username, "suzuki@example.jp");
    // Never by the display name: a stranger with Tanaka's name is a new person of their own.
    let stranger = sign_in(&app, identity("sub-3", "other", "田中 健二", None)).await.unwrap();
    assert_eq!(stranger.user.username, "other");
    // Made inactive at the directory: refused.
    let inactive = json!({"schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
        "Operations": [{"op": "replace", "value": {"active": false}}]});
    scim(&app, &token, Method::PATCH, &format!("/Users/{tanaka}"), Some(&inactive)).await;
    assert!(sign_in(&app, identity("sub-1", "tanaka@example.jp", "x", None)).await.is_err());
}

/// The user row a sign-in landed in, by its sign-in name.
async fn row_of(app: &TestApp, username: &str) -> i64 {
    let mut tx = app.db().begin_read().await.unwrap();
    backend::db::users::by_username(&mut tx, username).await.unwrap().expect("a user of that name").id
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_company_sign_in_never_takes_over_a_row_linked_to_another_account_nor_one_the_directory_gave_to_someone_new()
{
    let (app, token) = app_with_directory(1).await;
    // boss.sato, a manager by the directory, signs in once with his own provider account.
    provisioned(&app, &token, "boss.sato", "sales-approvers").await;
    let boss = sign_in(&app, identity("sub-boss", "boss.sato", "佐藤 社長", None)).await.unwrap();
    assert_eq!(boss.user.id, row_of(&app, "boss.sato").await);
    // Another provider account, named with a case variant (or an invisible character) of his name: not his row.
    for name in ["Boss.Sato", "boss\u{200B}.sato"] {
        let other = sign_in(&app, identity(&format!("sub-other-{}", name.len()), name, "他人", None)).await;
        assert!(other.as_ref().map_or(true, |u| u.user.id != boss.user.id), "{name} took over boss.sato: {other:?}");
    }
    assert_eq!(
        sign_in(&app, identity("sub-boss", "boss.sato", "佐藤 社長", None)).await.unwrap().user.id,
        boss.user.id
    );

    // The directory deletes person A and gives the sign-in name to a new person B (the provider renamed A's
    // account): A's provider account, linked to the row before, does not sign in as B; B's own account does.
    let a = provisioned(&app, &token, "kobayashi", "sales-approvers").await;
    let first = sign_in(&app, identity("sub-a", "kobayashi", "小林 A", None)).await.unwrap();
    let (deleted, _) = scim(&app, &token, Method::DELETE, &format!("/Users/{a}"), None).await;
    assert_eq!(deleted, StatusCode::NO_CONTENT);
    provisioned(&app, &token, "kobayashi", "sales-approvers").await;
    let b_row = row_of(&app, "kobayashi").await;
    let a_again = sign_in(&app, identity("sub-a", "kobayashi.former", "小林 A", None)).await;
    assert!(a_again.as_ref().map_or(true, |u| u.user.id != b_row), "A signed into B's row {b_row}: {a_again:?}");
    let b = sign_in(&app, identity("sub-b", "kobayashi", "小林 B", None)).await;
    assert_eq!(b.expect("B signs in as the person the directory provisioned").user.id, b_row);
    assert_eq!(first.user.id, b_row, "the directory took the old row in again for B (and its link ended)");
}

async fn disabled(app: &TestApp, username: &str) -> bool {
    let mut tx = app.db().begin_read().await.unwrap();
    backend::db::users::by_username(&mut tx, username).await.unwrap().unwrap().disabled_at.is_some()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_admins_emergency_disable_is_a_hold_the_directorys_routine_updates_do_not_lift() {
    let (app, token) = app_with_directory(1).await;
    let id = provisioned(&app, &token, "yamamoto", "sales-approvers").await;
    app.user("root", &["admin"], &[]).await;
    let root = caller(&app, "root").await;
    let user_id = row_of(&app, "yamamoto").await;
    backend::services::users::set_disabled(&app.state, &root, user_id, true).await.unwrap();
    assert!(disabled(&app, "yamamoto").await);

    // The directory's routine updates: a PUT saying active, a PUT without `active`, a PATCH making him active.
    let user = |active: Option<bool>| {
        let mut body = json!({"schemas": ["urn:ietf:params:scim:schemas:core:2.0:User"], "userName": "yamamoto"});
        if let Some(active) = active {
            body["active"] = json!(active);
        }
        body
    };
    let path = format!("/Users/{id}");
    for body in [user(Some(true)), user(None)] {
        let (status, answer) = scim(&app, &token, Method::PUT, &path, Some(&body)).await;
        assert_eq!(status, StatusCode::OK, "{answer}");
        assert!(disabled(&app, "yamamoto").await, "the admin's hold outlives {body}");
    }
    let activate = json!({"schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
        "Operations": [{"op": "replace", "value": {"active": true}}]});
    scim(&app, &token, Method::PATCH, &path, Some(&activate)).await;
    assert!(disabled(&app, "yamamoto").await, "nor does a PATCH lift it");
    assert!(sign_in(&app, identity("sub-y", "yamamoto", "山本", None)).await.is_err(), "no way in meanwhile");

    // Only an admin lifts it; the directory says he is active, so he is back.
    backend::services::users::set_disabled(&app.state, &root, user_id, false).await.unwrap();
    assert!(!disabled(&app, "yamamoto").await);

    // Held again, and made inactive by the directory meanwhile: lifting the hold does not let him in.
    backend::services::users::set_disabled(&app.state, &root, user_id, true).await.unwrap();
    scim(&app, &token, Method::PUT, &path, Some(&user(Some(false)))).await;
    backend::services::users::set_disabled(&app.state, &root, user_id, false).await.unwrap();
    assert!(disabled(&app, "yamamoto").await, "the directory's own word still stands");
    // And a PUT without `active` leaves the directory's inactive as it is.
    scim(&app, &token, Method::PUT, &path, Some(&user(None))).await;
    assert!(disabled(&app, "yamamoto").await, "an absent active changes nothing");
}
