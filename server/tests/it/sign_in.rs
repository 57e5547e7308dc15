//! QUALITY 5–7: password storage, policy and brute-force throttling.
use crate::harness::{PASSWORD, TestApp};
use app::backend::services::sign_in::MAX_FAILURES_PER_ACCOUNT;
use reqwest::StatusCode;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_user_and_a_wrong_password_get_the_same_answer() {
    let app = TestApp::spawn().await;
    app.user("sato", &["staff"], &["sales"]).await;
    let wrong = app.call("sign_in", &[("username", "sato"), ("password", "not-the-password")], None).await;
    let unknown = app.call("sign_in", &[("username", "nobody"), ("password", "not-the-password")], None).await;
    assert_eq!(wrong.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!((wrong.status, &wrong.body), (unknown.status, &unknown.body));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn repeated_failures_on_one_account_are_throttled_with_429_even_with_the_right_password() {
    let app = TestApp::spawn().await;
    app.user("sato", &["staff"], &["sales"]).await;
    for _ in 0..MAX_FAILURES_PER_ACCOUNT {
        let answer = app.call("sign_in", &[("username", "sato"), ("password", "guess-guess")], None).await;
        assert_eq!(answer.status, StatusCode::UNPROCESSABLE_ENTITY);
    }
    let answer = app.call("sign_in", &[("username", "sato"), ("password", PASSWORD)], None).await;
    assert_eq!(answer.status, StatusCode::TOO_MANY_REQUESTS, "{}", answer.body);
    assert!(app.audit_actions().await.contains(&"sign_in.throttled".to_string()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn throttling_ends_when_the_window_has_passed() {
    let app = TestApp::spawn().await;
    app.user("sato", &["staff"], &["sales"]).await;
    for _ in 0..MAX_FAILURES_PER_ACCOUNT {
        app.call("sign_in", &[("username", "sato"), ("password", "guess-guess")], None).await;
    }
    app.clock.advance(chrono::Duration::minutes(16));
    app.sign_in("sato", PASSWORD).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn passwords_are_stored_as_argon2id_phc_strings() {
    let app = TestApp::spawn().await;
    let id = app.user("sato", &["staff"], &["sales"]).await;
    let mut tx = app.db().begin_read().await.unwrap();
    let row = app::backend::db::users::by_id(&mut tx, id).await.unwrap().unwrap();
    assert!(row.password_hash.starts_with("$argon2id$v=19$m=19456,t=2,p=1$"), "{}", row.password_hash);
    assert!(!row.password_hash.contains(PASSWORD));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_weaker_hash_is_replaced_at_the_next_sign_in() {
    use argon2::password_hash::{PasswordHasher, SaltString, rand_core::OsRng};
    let app = TestApp::spawn().await;
    let id = app.user("sato", &["staff"], &["sales"]).await;
    let weak = argon2::Argon2::new(
        argon2::Algorithm::Argon2id,
        argon2::Version::V0x13,
        argon2::Params::new(4096, 1, 1, None).unwrap(),
    )
    .hash_password(PASSWORD.as_bytes(), &SaltString::generate(&mut OsRng))
    .unwrap()
    .to_string();
    let mut tx = app.db().begin_write().await.unwrap();
    app::backend::db::users::set_password_hash(&mut tx, id, &weak, chrono::Utc::now()).await.unwrap();
    tx.commit().await.unwrap();
    app.sign_in("sato", PASSWORD).await;
    let mut tx = app.db().begin_read().await.unwrap();
    let row = app::backend::db::users::by_id(&mut tx, id).await.unwrap().unwrap();
    assert!(row.password_hash.contains("m=19456,t=2,p=1"), "{}", row.password_hash);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_common_or_short_password_is_refused_when_an_admin_adds_a_user() {
    let app = TestApp::spawn().await;
    app.user("root", &["admin"], &[]).await;
    let admin = app.sign_in("root", PASSWORD).await;
    for (password, expected) in [("password123", "too common"), ("short", "at least 8")] {
        let body = serde_json::json!({"new": {"username": "new", "display_name": "New", "password": password,
            "roles": ["staff"], "departments": ["sales"]}});
        let answer = app.call_json("admin/add_user", body, Some(&admin)).await;
        assert_eq!(answer.status, StatusCode::UNPROCESSABLE_ENTITY);
        assert!(answer.body.contains(expected), "{}", answer.body);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_failures_from_one_address_across_accounts_are_throttled_too() {
    use app::backend::services::sign_in::MAX_FAILURES_PER_ADDRESS;
    let app = TestApp::spawn().await;
    app.user("sato", &["staff"], &["sales"]).await;
    for i in 0..MAX_FAILURES_PER_ADDRESS {
        let name = format!("spray{i}");
        app.call("sign_in", &[("username", name.as_str()), ("password", "summer-2026!")], None).await;
    }
    let answer = app.call("sign_in", &[("username", "sato"), ("password", PASSWORD)], None).await;
    assert_eq!(answer.status, StatusCode::TOO_MANY_REQUESTS);
}

/// Sign-in through a proxy that says whom it forwards for.
async fn sign_in_from(app: &TestApp, client: &str, username: &str, password: &str) -> StatusCode {
    let form = [("username", username), ("password", password)];
    let request = app.http.post(format!("{}/api/sign_in", app.url)).header("x-forwarded-for", client).form(&form);
    request.send().await.unwrap().status()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn behind_a_trusted_proxy_each_client_address_is_throttled_on_its_own_and_elsewhere_the_header_is_ignored() {
    use app::backend::services::sign_in::MAX_FAILURES_PER_ADDRESS;
    let app = TestApp::spawn_with(|s| s.trusted_proxies = vec!["127.0.0.1".parse().unwrap()]).await;
    app.user("sato", &["staff"], &["sales"]).await;
    for i in 0..MAX_FAILURES_PER_ADDRESS {
        sign_in_from(&app, "203.0.113.5", &format!("spray{i}"), "summer-2026!").await;
    }
    assert_eq!(sign_in_from(&app, "203.0.113.5", "sato", PASSWORD).await, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(sign_in_from(&app, "203.0.113.6", "sato", PASSWORD).await, StatusCode::OK, "another client behind the proxy");

    // Without a trusted proxy the header is anyone's to write: the connection's address counts.
    let app = TestApp::spawn().await;
    app.user("sato", &["staff"], &["sales"]).await;
    for i in 0..MAX_FAILURES_PER_ADDRESS {
        sign_in_from(&app, &format!("198.51.100.{i}"), &format!("spray{i}"), "summer-2026!").await;
    }
    assert_eq!(sign_in_from(&app, "203.0.113.9", "sato", PASSWORD).await, StatusCode::TOO_MANY_REQUESTS);
}
