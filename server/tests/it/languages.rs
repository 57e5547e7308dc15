//! Japanese first, English on request: the language cookie, each user's saved language and time zone.
use crate::harness::{PASSWORD, TestApp};
use reqwest::StatusCode;

async fn page(app: &TestApp, path: &str, cookies: &[&str]) -> String {
    let mut request = app.http.get(format!("{}{path}", app.url));
    if !cookies.is_empty() {
        request = request.header("cookie", cookies.join("; "));
    }
    request.send().await.unwrap().text().await.unwrap()
}

fn language_cookie(answer: &crate::harness::Answer) -> Option<String> {
    answer.set_cookies().iter().find(|c| c.starts_with("lang=")).map(|c| c.split(';').next().unwrap().to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_newcomer_reads_japanese_and_the_switch_remembers_english_in_the_browser() {
    let app = TestApp::spawn().await;
    let first = page(&app, "/sign-in", &[]).await;
    assert!(first.contains(r#"lang="ja""#) && first.contains("サインイン名"), "Japanese by default");

    let answer = app.call("switch_language", &[("language", "en")], None).await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
    let cookie = language_cookie(&answer).expect("a language cookie");
    assert_eq!(cookie, "lang=en");
    let english = page(&app, "/sign-in", &[&cookie]).await;
    assert!(english.contains(r#"lang="en""#) && english.contains("Sign-in name"), "English after the switch");
    assert!(!english.contains("サインイン名"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_users_language_is_saved_audited_and_follows_them_to_their_next_sign_in() {
    let app = TestApp::spawn().await;
    app.user("kimura", &["staff"], &["sales"]).await;
    let session = app.sign_in("kimura", PASSWORD).await;
    let answer = app.call("switch_language", &[("language", "en")], Some(&session)).await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
    assert!(app.audit_actions().await.contains(&"user.preferences_changed".to_string()));

    // Another browser: no language cookie until sign-in sets the saved one.
    let again = app.call("sign_in", &[("username", "kimura"), ("password", PASSWORD)], None).await;
    assert_eq!(language_cookie(&again).as_deref(), Some("lang=en"));
    assert_eq!(again.json()["language"], "en");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn times_read_in_the_users_time_zone_tokyo_until_they_choose() {
    let app = TestApp::spawn().await;
    backend::demo::load_if_empty(&app.state).await.unwrap().unwrap();
    app.user("kimura", &["staff"], &["sales"]).await;
    let session = app.sign_in("kimura", PASSWORD).await;
    let board = page(&app, "/", &[&session]).await;
    assert!(board.contains(" JST<"), "times in Tokyo time by default");

    let saved =
        app.call("save_preferences", &[("language", "ja"), ("time_zone", "America/New_York")], Some(&session)).await;
    assert_eq!(saved.status, StatusCode::OK, "{}", saved.body);
    let board = page(&app, "/", &[&session, "tz=America/New_York"]).await;
    assert!(!board.contains(" JST<") && (board.contains(" EST<") || board.contains(" EDT<")), "times in New York time");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_language_or_time_zone_is_refused_by_name_and_nothing_changes() {
    let app = TestApp::spawn().await;
    app.user("kimura", &["staff"], &["sales"]).await;
    let session = app.sign_in("kimura", PASSWORD).await;
    for (language, zone, field) in [("fr", "Asia/Tokyo", "language"), ("en", "Mars/Olympus", "time_zone")] {
        let answer = app.call("save_preferences", &[("language", language), ("time_zone", zone)], Some(&session)).await;
        assert_eq!(answer.status, StatusCode::UNPROCESSABLE_ENTITY, "{language} {zone}");
        assert!(answer.body.contains(field), "names {field}: {}", answer.body);
    }
    let me = app.call("me", &[], Some(&session)).await.json();
    assert_eq!((me["language"].as_str(), me["time_zone"].as_str()), (Some("ja"), Some("Asia/Tokyo")));
    assert!(!app.audit_actions().await.contains(&"user.preferences_changed".to_string()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn signing_in_sets_the_users_time_zone_for_the_pages_and_saving_changes_it() {
    let app = TestApp::spawn().await;
    app.user("kimura", &["staff"], &["sales"]).await;
    let answer = app.call("sign_in", &[("username", "kimura"), ("password", PASSWORD)], None).await;
    assert!(answer.set_cookies().iter().any(|c| c.starts_with("tz=Asia/Tokyo;")), "{:?}", answer.set_cookies());
    let session = answer.session_cookie().unwrap();
    let saved =
        app.call("save_preferences", &[("language", "en"), ("time_zone", "Europe/London")], Some(&session)).await;
    let cookies = saved.set_cookies();
    assert!(
        cookies.iter().any(|c| c.starts_with("tz=Europe/London;")) && cookies.iter().any(|c| c.starts_with("lang=en;"))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_timeline_and_the_audit_page_name_each_action_and_system_actor_in_the_readers_language() {
    let app = TestApp::spawn().await;
    backend::demo::load_if_empty(&app.state).await.unwrap().unwrap();
    app.user("kimura", &["staff", "auditor"], &["sales"]).await;
    let session = app.sign_in("kimura", PASSWORD).await;

    let japanese = page(&app, "/operations/ORD-1002", &[&session, "lang=ja"]).await;
    assert!(
        japanese.contains(r#"title="operation.stalled">停止を検知<"#),
        "the action named, its code kept: {japanese}"
    );
    assert!(japanese.contains("停止の検知（自動）") && japanese.contains("照合（自動）"), "system actors named");
    assert!(!japanese.contains(">operation.stalled<") && !japanese.contains("system:reconciler"), "no raw codes");
    // What each verdict rests on, in the reader's words (the API keeps the English sentence).
    assert!(japanese.contains("記録 1 件・状態 完了") && japanese.contains("この冪等キーの記録はありません"));
    // (The English sentence stays in the timeline's raw data, never in the evidence shown.)
    assert!(!japanese.contains("<span>1 record(s)") && !japanese.contains("<span>no record for this idempotency key"));
    let english = page(&app, "/operations/ORD-1002", &[&session, "lang=en"]).await;
    assert!(
        english.contains("1 record(s); status completed") && english.contains("No record for this idempotency key")
    );
    assert!(english.contains(r#"title="operation.stalled">Stall detected<"#), "{english}");
    assert!(english.contains("Stall sweeper") && english.contains("Reconciler") && !english.contains("停止を検知"));
    // Why the sweeper stopped it: stored as the trail's one English text, said in the reader's language.
    assert!(japanese.contains("900 秒以内に開始されませんでした") && !japanese.contains("not started within"));
    assert!(english.contains("Not started within 900 s"), "{english}");

    // The auditor's page names the action and keeps its code beside it, for searching and exports.
    let audit = page(&app, "/audit?process_id=ORD-1002", &[&session, "lang=en"]).await;
    assert!(audit.contains("Stall detected") && audit.contains(r#"<code class="hint">operation.stalled"#), "{audit}");
    let audit = page(&app, "/audit?process_id=ORD-1002", &[&session, "lang=ja"]).await;
    assert!(audit.contains("停止を検知") && audit.contains("照合（自動）") && audit.contains("システム"), "{audit}");
}
