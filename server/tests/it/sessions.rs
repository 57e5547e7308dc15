//! QUALITY 1–4 and 11: cookie attributes, session rotation, timeouts, sign-out, sessions ended by changes.
use crate::harness::{PASSWORD, TestApp};
use chrono::Duration;
use reqwest::StatusCode;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_session_cookie_is_host_prefixed_secure_http_only_and_same_site_behind_https() {
    let app = TestApp::spawn_with(|s| s.public_url = "https://rerun-gate.example.co.jp".into()).await;
    app.user("sato", &["staff"], &["sales"]).await;
    let answer = app.call("sign_in", &[("username", "sato"), ("password", PASSWORD)], None).await;
    let cookie = answer.set_cookies().into_iter().find(|c| c.starts_with("__Host-")).expect("__Host- cookie");
    let attributes: Vec<String> = cookie.split(';').map(|a| a.trim().to_lowercase()).collect();
    for expected in ["secure", "httponly", "samesite=lax", "path=/"] {
        assert!(attributes.contains(&expected.to_string()), "{expected} missing in {cookie}");
    }
    assert!(!attributes.iter().any(|a| a.starts_with("domain")), "no Domain allowed: {cookie}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_local_plain_http_trial_drops_only_secure_and_the_prefix() {
    let app = TestApp::spawn().await;
    app.user("sato", &["staff"], &["sales"]).await;
    let answer = app.call("sign_in", &[("username", "sato"), ("password", PASSWORD)], None).await;
    let cookie =
        answer.set_cookies().into_iter().find(|c| c.starts_with("rerun_gate_session=")).expect("session cookie");
    let cookie = cookie.to_lowercase();
    assert!(
        cookie.starts_with("rerun_gate_session=") && cookie.contains("httponly") && cookie.contains("samesite=lax")
    );
    assert!(!cookie.contains("secure"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn signing_in_again_gives_a_new_session_id_and_the_old_cookie_stops_working() {
    let app = TestApp::spawn().await;
    app.user("sato", &["staff"], &["sales"]).await;
    app.user("suzuki", &["manager"], &["sales"]).await;
    let old = app.sign_in("sato", PASSWORD).await;
    let answer = app.call("sign_in", &[("username", "suzuki"), ("password", PASSWORD)], Some(&old)).await;
    let new = answer.session_cookie().expect("new cookie");
    assert_ne!(old, new);
    assert_eq!(app.call("me", &[], Some(&old)).await.status, StatusCode::UNAUTHORIZED);
    assert_eq!(app.call("me", &[], Some(&new)).await.json()["username"], "suzuki");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_idle_for_longer_than_thirty_minutes_ends() {
    let app = TestApp::spawn().await;
    app.user("sato", &["staff"], &["sales"]).await;
    let cookie = app.sign_in("sato", PASSWORD).await;
    app.clock.advance(Duration::minutes(29));
    assert_eq!(app.call("me", &[], Some(&cookie)).await.status, StatusCode::OK);
    app.clock.advance(Duration::minutes(31));
    assert_eq!(app.call("me", &[], Some(&cookie)).await.status, StatusCode::UNAUTHORIZED);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_active_session_still_ends_eight_hours_after_sign_in() {
    let app = TestApp::spawn().await;
    app.user("sato", &["staff"], &["sales"]).await;
    let cookie = app.sign_in("sato", PASSWORD).await;
    for _ in 0..16 {
        app.clock.advance(Duration::minutes(29));
        assert_eq!(app.call("me", &[], Some(&cookie)).await.status, StatusCode::OK);
    }
    app.clock.advance(Duration::minutes(29));
    assert_eq!(app.call("me", &[], Some(&cookie)).await.status, StatusCode::UNAUTHORIZED);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_sign_out_the_session_is_gone_from_the_store_and_the_old_cookie_is_refused() {
    let app = TestApp::spawn().await;
    app.user("sato", &["staff"], &["sales"]).await;
    let cookie = app.sign_in("sato", PASSWORD).await;
    assert_eq!(stored_sessions(&app).await, 1);
    assert_eq!(app.call("sign_out", &[], Some(&cookie)).await.status, StatusCode::OK);
    assert_eq!(stored_sessions(&app).await, 0);
    assert_eq!(app.call("me", &[], Some(&cookie)).await.status, StatusCode::UNAUTHORIZED);
}

/// The rows of the session store (tower-sessions' table on either engine).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_within_a_minute_of_the_last_noted_one_does_not_write_the_session_back() {
    let app = TestApp::spawn().await;
    app.user("sato", &["staff"], &["sales"]).await;
    let cookie = app.sign_in("sato", PASSWORD).await;
    let at_sign_in = stored_session_data(&app).await;
    app.clock.advance(Duration::seconds(59));
    assert_eq!(app.call("me", &[], Some(&cookie)).await.status, StatusCode::OK);
    assert_eq!(stored_session_data(&app).await, at_sign_in, "59 s after the noted activity, a request is no write");
    app.clock.advance(Duration::seconds(1));
    assert_eq!(app.call("me", &[], Some(&cookie)).await.status, StatusCode::OK);
    assert_ne!(stored_session_data(&app).await, at_sign_in, "a minute on, the activity is noted");
}

async fn stored_session_data(app: &TestApp) -> Vec<u8> {
    use backend::db::Db;
    match app.db() {
        Db::Sqlite(pool, ..) => sqlx::query_scalar("SELECT data FROM tower_sessions").fetch_one(pool).await.unwrap(),
        Db::Postgres(pool, ..) => {
            sqlx::query_scalar("SELECT data FROM tower_sessions.session").fetch_one(pool).await.unwrap()
        }
    }
}

async fn stored_sessions(app: &TestApp) -> i64 {
    use backend::db::Db;
    match app.db() {
        Db::Sqlite(pool, ..) => {
            sqlx::query_scalar("SELECT COUNT(*) FROM tower_sessions").fetch_one(pool).await.unwrap()
        }
        Db::Postgres(pool, ..) => {
            sqlx::query_scalar("SELECT COUNT(*) FROM tower_sessions.session").fetch_one(pool).await.unwrap()
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_password_change_ends_the_users_other_sessions_but_keeps_this_one() {
    let app = TestApp::spawn().await;
    app.user("sato", &["staff"], &["sales"]).await;
    let laptop = app.sign_in("sato", PASSWORD).await;
    let phone = app.sign_in("sato", PASSWORD).await;
    let answer = app
        .call(
            "change_password",
            &[("current_password", PASSWORD), ("new_password", "a-new-longer-passphrase")],
            Some(&laptop),
        )
        .await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
    assert_eq!(app.call("me", &[], Some(&phone)).await.status, StatusCode::UNAUTHORIZED);
    assert_eq!(app.call("me", &[], Some(&laptop)).await.status, StatusCode::OK);
    app.sign_in("sato", "a-new-longer-passphrase").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn disabling_a_user_ends_their_sessions() {
    let app = TestApp::spawn().await;
    let sato = app.user("sato", &["staff"], &["sales"]).await;
    app.user("root", &["admin"], &[]).await;
    let victim = app.sign_in("sato", PASSWORD).await;
    let admin = app.sign_in("root", PASSWORD).await;
    let answer = app
        .call("admin/set_user_disabled", &[("user_id", &sato.to_string()), ("disabled", "true")], Some(&admin))
        .await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
    assert_eq!(app.call("me", &[], Some(&victim)).await.status, StatusCode::UNAUTHORIZED);
    let again = app.call("sign_in", &[("username", "sato"), ("password", PASSWORD)], None).await;
    assert_eq!(again.status, StatusCode::UNPROCESSABLE_ENTITY);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_role_taken_away_mid_session_is_refused_at_the_next_call() {
    let app = TestApp::spawn().await;
    let second = app.user("second", &["admin", "staff"], &["sales"]).await;
    app.user("root", &["admin"], &[]).await;
    let theirs = app.sign_in("second", PASSWORD).await;
    let root = app.sign_in("root", PASSWORD).await;
    assert_eq!(app.call("admin/list_users", &[], Some(&theirs)).await.status, StatusCode::OK);
    let body = serde_json::json!({"user_id": second, "roles": ["staff"], "departments": ["sales"]});
    let answer = app.call_json("admin/set_user_roles", body, Some(&root)).await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
    assert_eq!(app.call("admin/list_users", &[], Some(&theirs)).await.status, StatusCode::FORBIDDEN);
}

/// Disabling a user ends their sessions for good: enabled again, they sign in anew and the old cookie stays dead.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_disabled_users_cookie_stays_dead_after_the_user_is_enabled_again() {
    use backend::services::users::set_disabled;
    let app = TestApp::spawn().await;
    app.user("admin", &["admin"], &[]).await;
    let sato = app.user("sato", &["staff"], &["sales"]).await;
    let old = app.sign_in("sato", PASSWORD).await;
    assert_eq!(app.call("me", &[], Some(&old)).await.status, StatusCode::OK);
    let admin = crate::fixtures::caller(&app, "admin").await;
    set_disabled(&app.state, &admin, sato, true).await.unwrap();
    assert_eq!(app.call("me", &[], Some(&old)).await.status, StatusCode::UNAUTHORIZED);
    set_disabled(&app.state, &admin, sato, false).await.unwrap();
    assert_eq!(app.call("me", &[], Some(&old)).await.status, StatusCode::UNAUTHORIZED, "the old cookie revived");
    let new = app.sign_in("sato", PASSWORD).await;
    assert_eq!(app.call("me", &[], Some(&new)).await.status, StatusCode::OK);
}

/// Guessing the current password through a session is throttled as sign-in is: after five wrong ones even the
/// right one is answered 429.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn guessing_the_current_password_is_throttled_like_sign_in() {
    use backend::services::sign_in::MAX_FAILURES_PER_ACCOUNT;
    let app = TestApp::spawn().await;
    app.user("sato", &["staff"], &["sales"]).await;
    let cookie = app.sign_in("sato", PASSWORD).await;
    let change = |current: &'static str| {
        let (app, cookie) = (&app, cookie.clone());
        async move {
            let form = [("current_password", current), ("new_password", "a-new-longer-passphrase")];
            app.call("change_password", &form, Some(&cookie)).await.status
        }
    };
    for _ in 0..MAX_FAILURES_PER_ACCOUNT {
        assert_eq!(change("a-wrong-guess").await, StatusCode::UNPROCESSABLE_ENTITY);
    }
    assert_eq!(change(PASSWORD).await, StatusCode::TOO_MANY_REQUESTS);
}
