//! QUALITY 12–16: cross-site refusal, CSP with a nonce, headers, body limits, generic errors.
use crate::harness::{PASSWORD, TestApp};
use reqwest::StatusCode;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cross_site_post_to_a_server_function_is_refused_and_a_same_origin_one_is_not() {
    let app = TestApp::spawn().await;
    app.user("sato", &["staff"], &["sales"]).await;
    let form = [("username", "sato"), ("password", PASSWORD)];
    let cross_site = app
        .http
        .post(format!("{}/api/sign_in", app.url))
        .form(&form)
        .header("sec-fetch-site", "cross-site")
        .send()
        .await
        .unwrap();
    assert_eq!(cross_site.status(), StatusCode::FORBIDDEN);
    let foreign_origin = app
        .http
        .post(format!("{}/api/sign_in", app.url))
        .form(&form)
        .header("origin", "https://evil.example")
        .send()
        .await
        .unwrap();
    assert_eq!(foreign_origin.status(), StatusCode::FORBIDDEN);
    let same_origin = app
        .http
        .post(format!("{}/api/sign_in", app.url))
        .form(&form)
        .header("sec-fetch-site", "same-origin")
        .header("origin", app.url.as_str())
        .send()
        .await
        .unwrap();
    assert_eq!(same_origin.status(), StatusCode::OK);
    assert!(!app.audit_actions().await.iter().any(|a| a == "sign_in.failed"), "refused requests never reach sign-in");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_function_that_changes_state_does_not_answer_get() {
    let app = TestApp::spawn().await;
    let answer = app.http.get(format!("{}/api/sign_out", app.url)).send().await.unwrap();
    assert!(answer.status().is_client_error(), "{}", answer.status());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sign_in_page_is_rendered_with_a_nonced_hydration_script_and_a_strict_csp() {
    let app = TestApp::spawn().await;
    let first = app.http.get(format!("{}/sign-in", app.url)).send().await.unwrap();
    assert_eq!(first.status(), StatusCode::OK);
    let csp = first.headers()["content-security-policy"].to_str().unwrap().to_string();
    for part in
        ["'strict-dynamic'", "'wasm-unsafe-eval'", "object-src 'none'", "base-uri 'none'", "frame-ancestors 'none'"]
    {
        assert!(csp.contains(part), "{part} missing in {csp}");
    }
    assert!(!csp.contains("unsafe-inline"));
    assert_eq!(first.headers()["x-content-type-options"], "nosniff");
    assert_eq!(first.headers()["referrer-policy"], "same-origin");
    let nonce = csp.split("'nonce-").nth(1).unwrap().split('\'').next().unwrap().to_string();
    let html = first.text().await.unwrap();
    assert!(html.contains(&format!("nonce=\"{nonce}\"")), "hydration script without the nonce");
    assert!(html.contains("/pkg/rerun-gate.") && html.contains("hydrate"), "no hydration script");
    assert!(html.contains("サインイン"));

    let second = app.http.get(format!("{}/sign-in", app.url)).send().await.unwrap();
    let csp2 = second.headers()["content-security-policy"].to_str().unwrap();
    assert!(!csp2.contains(&nonce), "the nonce must change on every response");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_is_gzipped_for_a_browser_that_accepts_it_and_reads_the_same() {
    let app = TestApp::spawn().await;
    let plain = app.http.get(format!("{}/sign-in", app.url)).send().await.unwrap();
    assert!(plain.headers().get("content-encoding").is_none(), "compressed without being asked");
    let plain = plain.text().await.unwrap();
    let asked = app.http.get(format!("{}/sign-in", app.url)).header("accept-encoding", "gzip, br");
    let zipped = asked.send().await.unwrap();
    assert_eq!(zipped.headers()["content-encoding"], "gzip");
    assert!(zipped.headers()["vary"].to_str().unwrap().contains("accept-encoding"));
    let bytes = zipped.bytes().await.unwrap();
    let mut html = String::new();
    std::io::Read::read_to_string(&mut flate2::read::GzDecoder::new(&bytes[..]), &mut html).unwrap();
    assert!(bytes.len() < html.len(), "{} bytes for {} of HTML", bytes.len(), html.len());
    assert!(html.contains("サインイン") && html.contains("</body>"), "{html}");
    assert!(html.len().abs_diff(plain.len()) < 100, "the two pages differ by more than their nonces");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_signed_out_visitor_of_any_page_is_sent_to_the_sign_in_form_and_sees_nothing_of_the_page() {
    let app = TestApp::spawn().await;
    app.user("kanrisha", &["admin"], &[]).await;
    for (path, next) in [
        ("/", "%2F"),
        ("/admin/users", "%2Fadmin%2Fusers"),
        ("/audit?process_id=ORD-1", "%2Faudit%3Fprocess_id%3DORD-1"),
    ] {
        let answer = app.http.get(format!("{}{path}", app.url)).header("accept", "text/html").send().await.unwrap();
        assert_eq!(answer.status(), StatusCode::SEE_OTHER, "{path}");
        assert_eq!(answer.headers()["location"], format!("/sign-in?next={next}").as_str());
        let html = answer.text().await.unwrap();
        assert!(!html.contains("kanrisha"), "{path} leaked page content");
    }
    let sign_in = app.http.get(format!("{}/sign-in?next=%2Fadmin%2Fusers", app.url)).send().await.unwrap();
    assert_eq!(sign_in.status(), StatusCode::OK, "the sign-in page itself is open");
    let html = sign_in.text().await.unwrap();
    assert!(html.contains(r#"action="/api/sign_in""#) && html.contains("/pkg/rerun-gate."));
    // Programs calling server functions get their 401, not a redirect.
    assert_eq!(app.call("me", &[], None).await.status, StatusCode::UNAUTHORIZED);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_wildcard_cors_and_hsts_only_behind_https() {
    let app = TestApp::spawn().await;
    let answer =
        app.http.get(format!("{}/healthz", app.url)).header("origin", "https://evil.example").send().await.unwrap();
    assert!(answer.headers().get("access-control-allow-origin").is_none());
    assert!(answer.headers().get("strict-transport-security").is_none());
    let https = TestApp::spawn_with(|s| s.public_url = "https://rg.example.co.jp".into()).await;
    let answer = https.http.get(format!("{}/healthz", https.url)).send().await.unwrap();
    assert!(answer.headers()["strict-transport-security"].to_str().unwrap().contains("max-age="));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_oversized_body_is_refused_with_413_by_a_form_the_api_and_a_webhook() {
    let app = TestApp::spawn().await;
    // Sixteen times the limit: more than the sockets buffer, so a server that closed the connection without
    // reading the refused body would reset it before the client reads the 413.
    let big = "x".repeat(16 * crate::harness::BODY_LIMIT);
    let answer = app.call("sign_in", &[("username", "sato"), ("password", &big)], None).await;
    assert_eq!(answer.status, StatusCode::PAYLOAD_TOO_LARGE);
    let token = app.token("intake", &["sales"]).await;
    let body = serde_json::json!({"process_id": big});
    let api = app.api(reqwest::Method::POST, "/api/v1/operations", &token, Some("big-1"), Some(&body)).await;
    assert_eq!(api.status, StatusCode::PAYLOAD_TOO_LARGE, "{}", api.body);
    // Many at once, so that a refusal that closes the connection on a client still sending shows up.
    let hooks = (0..32).map(|_| app.http.post(format!("{}/hooks/ai-summary", app.url)).body(big.clone()).send());
    for hook in futures::future::join_all(hooks).await {
        assert_eq!(hook.expect("an answer, not a broken connection").status(), StatusCode::PAYLOAD_TOO_LARGE);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_server_function_call_gets_a_clear_client_error_without_internals() {
    let app = TestApp::spawn().await;
    let answer = app.call("sign_in", &[("nonsense", "1")], None).await;
    assert!(answer.status.is_client_error() || answer.status.is_server_error());
    assert!(!answer.body.to_lowercase().contains("sqlx") && !answer.body.contains("panicked"), "{}", answer.body);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_and_readiness_answer() {
    let app = TestApp::spawn().await;
    assert_eq!(app.http.get(format!("{}/healthz", app.url)).send().await.unwrap().status(), StatusCode::OK);
    assert_eq!(app.http.get(format!("{}/readyz", app.url)).send().await.unwrap().text().await.unwrap(), "ready");
}

/// The server binary in its own process (a renderer panic must not reach the other tests' servers), with a
/// fresh database and the example configuration: visitors who leave mid-page neither stop it nor make its
/// renderer panic.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn visitors_who_leave_before_a_page_has_arrived_do_not_stop_the_server() {
    let app = TestApp::spawn().await;
    for role in ["staff", "manager", "auditor", "admin"] {
        app.user(role, &[role], &["sales"]).await;
    }
    let config = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../rerun-gate.toml"));
    let log = std::env::temp_dir().join(format!("rerun-gate-leavers-{}.log", uuid::Uuid::new_v4().simple()));
    let (mut server, url) =
        crate::harness::server_process(&app.database_url, config, &[("RUST_LOG", "error")], Some(&log)).await;
    let mut cookies = Vec::new();
    for role in ["staff", "manager", "auditor", "admin"] {
        cookies.push(crate::harness::sign_in_at(&app.http, &url, role, PASSWORD).await);
    }
    let pages = app::api::policy::POLICY.iter().filter(|e| e.kind == domain::access::Kind::Page);
    let paths: Vec<String> = pages.map(|e| crate::policy::concrete(e.path)).collect();
    // Leptos once deadlocked a runtime worker this way (vendor/reactive_graph/PATCHED.md); two of them, and the
    // server answered nobody.
    for _ in 0..3 {
        for cookie in &cookies {
            for path in &paths {
                let response = app.http.get(format!("{url}{path}")).header("cookie", cookie).send().await.unwrap();
                drop(response); // headers only: the visitor is gone
            }
        }
    }
    let mut answered = Vec::new();
    for cookie in &cookies {
        let page =
            app.http.get(format!("{url}/account")).header("cookie", cookie).timeout(std::time::Duration::from_secs(10));
        answered.push(match page.send().await {
            Ok(page) => page.status() == StatusCode::OK && page.text().await.unwrap_or_default().contains("</html>"),
            Err(_) => false,
        });
    }
    let _ = server.kill();
    let _ = server.wait();
    let logged = std::fs::read_to_string(&log).unwrap_or_default();
    let _ = std::fs::remove_file(&log);
    assert_eq!(answered, [true; 4], "the server still answers every visitor with a whole page");
    let troubles = crate::harness::server_troubles(&logged);
    assert!(troubles.is_empty(), "visitors who leave make the renderer panic:\n{}", troubles.join("\n"));
}

/// A request ID goes into immutable audit rows: a client's is kept only when it is short and plain, any other is
/// replaced by a fresh one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clients_request_id_is_kept_only_when_it_is_short_and_plain() {
    let app = TestApp::spawn().await;
    let echoed = |sent: String| {
        let app = &app;
        async move {
            let answer =
                app.http.get(format!("{}/healthz", app.url)).header("x-request-id", sent).send().await.unwrap();
            answer.headers().get("x-request-id").and_then(|v| v.to_str().ok()).unwrap_or_default().to_string()
        }
    };
    assert_eq!(echoed("trace-0b7c.3a9e_1".into()).await, "trace-0b7c.3a9e_1");
    for odd in ["a".repeat(65), "with space".into(), "semi;colon".into(), "<script>".into()] {
        let replaced = echoed(odd.clone()).await;
        assert_ne!(replaced, odd);
        assert!(uuid::Uuid::parse_str(&replaced).is_ok(), "{odd:?} was answered with {replaced:?}");
    }
}

/// QUALITY 15: a client that starts a request and then sends its body too slowly holds nothing for long.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_whose_body_never_arrives_is_answered_408_after_the_request_timeout() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let app = TestApp::spawn_with(|s| s.request_timeout = std::time::Duration::from_secs(1)).await;
    let address = app.url.trim_start_matches("http://").to_string();
    let mut stream = tokio::net::TcpStream::connect(&address).await.unwrap();
    let head = format!(
        "POST /api/sign_in HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/x-www-form-urlencoded\r\n\
         Content-Length: 100\r\n\r\nusername=sa"
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    let mut answer = vec![0u8; 64];
    let read = tokio::time::timeout(std::time::Duration::from_secs(20), stream.read(&mut answer)).await;
    let read = read.expect("an answer before the client gives up").unwrap();
    let status_line = String::from_utf8_lossy(&answer[..read]).lines().next().unwrap_or("").to_string();
    assert_eq!(status_line, "HTTP/1.1 408 Request Timeout");
}
