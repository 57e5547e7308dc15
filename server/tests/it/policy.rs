//! QUALITY 9–10: every route the server registers is in the one policy table, every kind of caller gets the
//! answer the table says, and another department's objects answer 404 on every route that takes one.
use crate::fixtures;
use crate::harness::{PASSWORD, TestApp};
use app::api::policy::POLICY;
use domain::access::{Allowed, CallerKind, Entry, Kind};
use domain::roles::Role;
use reqwest::{Method, StatusCode};

/// The credentials each kind of caller brings: a session cookie, a bearer token, or nothing.
pub struct Callers {
    pub cookies: Vec<(Role, String)>,
    pub token: String,
}

impl Callers {
    pub async fn sign_in_everyone(app: &TestApp) -> Callers {
        for role in Role::ALL {
            app.user(&format!("policy-{role}"), &[role.as_str()], &["sales"]).await;
        }
        Callers { cookies: Self::signed_in(app).await, token: app.token("policy", &["sales"]).await }
    }

    /// A session for each role (again, after a call that ended theirs).
    async fn signed_in(app: &TestApp) -> Vec<(Role, String)> {
        let mut cookies = Vec::new();
        for role in Role::ALL {
            cookies.push((role, app.sign_in(&format!("policy-{role}"), PASSWORD).await));
        }
        cookies
    }

    fn cookie(&self, role: Role) -> &str {
        &self.cookies.iter().find(|(r, _)| *r == role).expect("signed in").1
    }
}

/// Placeholders for path parameters: well-formed, naming nothing that exists.
pub fn concrete(pattern: &str) -> String {
    pattern
        .replace("{process_id}", "P-NOBODY")
        .replace("{id}", "00000000-0000-0000-0000-000000000000")
        .replace("{step}", "register_order")
        .replace("{connector}", "ai-summary")
        .replace("{service}", "billing")
}

/// Calls `entry` at `url` as `caller`, with the placeholders of `concrete` (or `path` when given): the status and
/// where it redirects to, once the whole body has come.
pub async fn call(
    http: &reqwest::Client,
    url: &str,
    (entry, path): (&Entry, Option<String>),
    caller: CallerKind,
    callers: &Callers,
) -> Result<(StatusCode, String), String> {
    let method = Method::from_bytes(entry.method.as_bytes()).unwrap();
    let path = path.unwrap_or_else(|| concrete(entry.path));
    let mut request = http.request(method, format!("{url}{path}"));
    request = match entry.kind {
        Kind::ServerFn => request.header("content-type", "application/x-www-form-urlencoded").body(""),
        _ if entry.method == "POST" => request.header("content-type", "application/json").body("{}"),
        _ => request,
    };
    request = match caller {
        CallerKind::Anonymous => request,
        CallerKind::User(role) => request.header("cookie", callers.cookie(role)),
        CallerKind::ApiClient => request.bearer_auth(&callers.token),
    };
    let response = request.send().await;
    let response = response.map_err(|e| format!("{} {} as {caller:?}: no answer ({e})", entry.method, entry.path))?;
    let location = response.headers().get("location").and_then(|l| l.to_str().ok()).unwrap_or_default().to_string();
    let status = response.status();
    // The whole body is read: a body that stops before its end is a failure like a wrong answer.
    match tokio::time::timeout(std::time::Duration::from_secs(15), response.bytes()).await {
        Ok(Ok(_)) => Ok((status, location)),
        Ok(Err(e)) => Err(format!("{} {} as {caller:?}: the body broke off ({e})", entry.method, entry.path)),
        Err(_) => Err(format!("{} {} as {caller:?}: the body stalled", entry.method, entry.path)),
    }
}

/// What the table promises a caller, checked against the answer; `None` when they agree.
fn disagreement(entry: &Entry, caller: CallerKind, status: StatusCode, location: &str) -> Option<String> {
    let admitted = entry.allowed.admits(caller);
    let agrees = match (admitted, entry.kind, caller) {
        // Let through: whatever the placeholder arguments lead to, but never a refusal or a server error.
        (true, ..) => !matches!(status, StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN) && !status.is_server_error(),
        (false, kind, _) if kind.sends_to_sign_in() => {
            status.is_redirection() && location.starts_with("/sign-in?next=")
        }
        // A signed-in user without the role is forbidden; anyone without the needed credential must sign in.
        (false, _, CallerKind::User(_)) if entry.allowed.needs_session() => status == StatusCode::FORBIDDEN,
        (false, ..) if entry.allowed.needs_session() => status == StatusCode::UNAUTHORIZED,
        // Token, signature and metrics routes check their own credential: refused either way.
        (false, ..) => matches!(status, StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN),
    };
    (!agrees).then(|| {
        format!("{} {} as {caller:?}: {status} {location} (table: {:?})", entry.method, entry.path, entry.allowed)
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_registered_route_is_in_the_policy_table_and_answers_every_kind_of_caller_as_it_says() {
    // With the demo systems (their routes exist only then) and a metrics token (nobody here brings it).
    let app = TestApp::spawn_with(|s| {
        s.demo_systems = true;
        s.metrics_token = Some("policy-test-metrics-token".to_string().into());
    })
    .await;
    let registered = server::http::policy::registered();
    let missing: Vec<_> = registered.iter().filter(|(m, p)| app::api::policy::entry(m, p).is_none()).collect();
    assert!(missing.is_empty(), "routes the server registers but the policy table does not name: {missing:?}");
    let stale: Vec<_> = POLICY.iter().filter(|e| !registered.contains(&(e.method.into(), e.path.into()))).collect();
    assert!(stale.is_empty(), "policy entries for routes the server does not register: {stale:?}");

    let mut callers = Callers::sign_in_everyone(&app).await;
    // Signing out (here or everywhere) ends the sessions the other calls use: last, each with new sessions.
    let mut entries: Vec<&Entry> = POLICY.iter().collect();
    entries.sort_by_key(|e| e.path.starts_with("/api/sign_out"));
    let mut wrong = Vec::new();
    for entry in entries {
        if entry.path.starts_with("/api/sign_out") {
            callers.cookies = Callers::signed_in(&app).await;
        }
        for caller in CallerKind::ALL {
            match call(&app.http, &app.url, (entry, None), caller, &callers).await {
                Ok((status, location)) => wrong.extend(disagreement(entry, caller, status, &location)),
                Err(no_answer) => wrong.push(no_answer),
            }
        }
    }
    assert!(wrong.is_empty(), "answers that disagree with the policy table:\n{}", wrong.join("\n"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_route_missing_from_the_table_is_refused_even_though_the_router_has_it() {
    // The gate itself, on a router with one route nobody put in the table.
    backend::reconciliation::ssrf::install_tls_provider();
    let router = axum::Router::new()
        .route("/not-in-the-table", axum::routing::get(|| async { "secret" }))
        .route_layer(axum::middleware::from_fn(server::http::policy::gate));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/not-in-the-table", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, router).await });
    let answer = reqwest::get(url).await.unwrap();
    assert_eq!(answer.status(), StatusCode::NOT_FOUND);
    assert!(!answer.text().await.unwrap().contains("secret"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_department_s_operation_and_request_answer_404_on_every_route_that_takes_one() {
    let app = TestApp::spawn().await;
    let sales = app.token("intake", &["sales"]).await;
    app.user("sato", &["staff"], &["sales"]).await;
    let sato = fixtures::caller(&app, "sato").await;
    let request = fixtures::pending_request(&app, &sales, &sato, "ORD-X").await;
    for (name, role) in [("kato", "staff"), ("ito", "manager")] {
        app.user(name, &[role], &["billing"]).await;
    }
    let kato = app.sign_in("kato", PASSWORD).await;
    let ito = app.sign_in("ito", PASSWORD).await;
    fixtures::stalled(&app, &sales, "ORD-Y").await;
    let selection = contract::batches::Selection { process_ids: vec!["ORD-Y".into()], ..Default::default() };
    let batch = backend::services::batches::create(&app.state, &sato, selection, "障害").await.unwrap();
    let op = ("process_id", "ORD-X");
    // (server function, its arguments, who calls it)
    type Call<'a> = (&'a str, Vec<(&'a str, &'a str)>, &'a str);
    let calls: Vec<Call> = vec![
        ("board/operation", vec![op], &kato),
        ("board/reconcile", vec![op], &kato),
        ("board/hold", vec![op, ("reason", "調査")], &kato),
        ("board/release", vec![op, ("reason", "調査")], &kato),
        (
            "board/manual_verdict",
            vec![op, ("step", "register_order"), ("verdict", "not_executed"), ("evidence", "電話")],
            &ito,
        ),
        ("board/adopt", vec![op, ("step", "ai_summary"), ("result_id", "resp_1")], &kato),
        ("reruns/start", vec![op, ("reason", "再実行")], &kato),
        ("incidents/patterns", vec![op], &kato),
        ("incidents/acknowledge", vec![op, ("incident_id", "1"), ("evidence", "同じ")], &kato),
        ("reruns/load", vec![("id", &request)], &kato),
        ("reruns/confirm", vec![("id", &request), ("number", "1"), ("comment", "確認")], &kato),
        ("reruns/confirm_key_alone", vec![("id", &request), ("step", "register_order"), ("comment", "確認")], &kato),
        ("reruns/submit", vec![("id", &request)], &kato),
        ("reruns/replan", vec![("id", &request)], &kato),
        ("reruns/cancel", vec![("id", &request), ("reason", "取り下げ")], &kato),
        ("approvals/decide", vec![("id", &request), ("approve", "true"), ("comment", "")], &ito),
        ("batches/load", vec![("id", &batch)], &kato),
        ("batches/progress", vec![("id", &batch)], &kato),
        ("batches/request", vec![("id", &batch)], &kato),
        ("batches/confirm", vec![("id", &batch), ("number", "1"), ("comment", "確認")], &kato),
        ("batches/submit", vec![("id", &batch)], &kato),
        ("batches/decide", vec![("id", &batch), ("approve", "true"), ("comment", "")], &ito),
        ("batches/control", vec![("id", &batch), ("control", "cancel"), ("reason", "取り消し")], &kato),
    ];
    let mut wrong = Vec::new();
    for (endpoint, form, cookie) in calls {
        let answer = app.call(endpoint, &form, Some(cookie)).await;
        if answer.status != StatusCode::NOT_FOUND {
            wrong.push(format!("{endpoint}: {} {}", answer.status, answer.body));
        }
    }
    // Filing names the process IDs it could not find, the same words for another department's as for none.
    let file = |process_ids: &'static str| {
        let form = [
            ("process_ids", process_ids),
            ("title", "t"),
            ("occurred_at", "2026-11-29T10:00"),
            ("impact", "i"),
            ("cause", "c"),
            ("response", "r"),
        ];
        let (app, kato) = (&app, &kato);
        async move { app.call("incidents/file", &form, Some(kato)).await }
    };
    let (theirs, nobodys) = (file("ORD-X").await, file("ORD-NOBODY").await);
    if (theirs.status, theirs.body.replace("ORD-X", "?")) != (nobodys.status, nobodys.body.replace("ORD-NOBODY", "?")) {
        wrong.push(format!(
            "incidents/file: {} {} vs unknown: {} {}",
            theirs.status, theirs.body, nobodys.status, nobodys.body
        ));
    }
    // A bulk selection by ticks: another department's process ID is as unknown as one that does not exist.
    let tick = |process_ids: &'static str| {
        let form = [("process_ids", process_ids), ("reason", "障害")];
        let (app, kato) = (&app, &kato);
        async move { app.call("batches/create", &form, Some(kato)).await }
    };
    let (theirs, nobodys) = (tick("ORD-Y").await, tick("ORD-NOBODY").await);
    if (theirs.status, theirs.body.replace("ORD-Y", "?")) != (nobodys.status, nobodys.body.replace("ORD-NOBODY", "?")) {
        wrong.push(format!(
            "batches/create: {} {} vs unknown: {} {}",
            theirs.status, theirs.body, nobodys.status, nobodys.body
        ));
    }
    let evidence = app
        .http
        .get(format!("{}/operations/ORD-X/evidence.zip", app.url))
        .header("cookie", &kato)
        .send()
        .await
        .unwrap();
    if evidence.status() != StatusCode::NOT_FOUND {
        wrong.push(format!("evidence.zip: {}", evidence.status()));
    }
    let billing = app.token("billing", &["billing"]).await;
    let read = app.api(Method::GET, "/api/v1/operations/ORD-X", &billing, None, None).await;
    let event = serde_json::json!({"seq": 9, "type": "succeeded", "result_id": "X"});
    let report = app
        .api(Method::POST, "/api/v1/operations/ORD-X/steps/register_order/events", &billing, None, Some(&event))
        .await;
    for (what, answer) in [("GET operation", read), ("step event", report)] {
        if answer.status != StatusCode::NOT_FOUND {
            wrong.push(format!("API {what}: {} {}", answer.status, answer.body));
        }
    }
    assert!(wrong.is_empty(), "another department's objects must answer 404:\n{}", wrong.join("\n"));
    // Nothing of it changed: the request still waits for its own department's owner.
    let view = backend::services::rerun_requests::view(&app.state, &sato, &request).await.unwrap();
    assert_eq!(serde_json::to_value(&view).unwrap()["status"], "pending_approval");
}

#[test]
fn the_table_names_a_role_or_credential_for_everything_that_is_not_public() {
    let public: Vec<_> = POLICY.iter().filter(|e| e.allowed == Allowed::Anyone).map(|e| e.path).collect();
    let expected = [
        "/sign-in",
        "/sign-in/oidc",
        "/sign-in/oidc/callback",
        "/api/sign_in",
        "/api/switch_language",
        "/api/openapi.json",
        "/healthz",
        "/readyz",
        "/demo/{service}/requests",
        "/demo/{service}/requests/{id}",
    ];
    for path in &public {
        assert!(expected.contains(path), "{path} is open to anyone: is that meant?");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_server_function_and_form_post_refuses_a_cross_site_caller_even_a_signed_in_one() {
    let app = TestApp::spawn().await;
    let callers = Callers::sign_in_everyone(&app).await;
    let mut wrong = Vec::new();
    let browser_posts = POLICY.iter().filter(|e| {
        e.method == "POST" && matches!(e.kind, Kind::ServerFn | Kind::Page | Kind::Download | Kind::Export)
    });
    for entry in browser_posts {
        for (header, value) in [("sec-fetch-site", "cross-site"), ("origin", "https://evil.example")] {
            let request = app.http.post(format!("{}{}", app.url, concrete(entry.path))).header(header, value);
            let answer =
                request.header("cookie", callers.cookie(Role::Admin)).form(&[("x", "1")]).send().await.unwrap();
            if answer.status() != StatusCode::FORBIDDEN {
                wrong.push(format!("{} with {header}: {value}: {}", entry.path, answer.status()));
            }
        }
    }
    assert!(wrong.is_empty(), "cross-site calls that were not refused:\n{}", wrong.join("\n"));
}
