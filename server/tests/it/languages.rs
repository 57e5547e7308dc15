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

    // The auditor's page names the action and keeps its code as its tooltip, for searching and exports.
    let audit = page(&app, "/audit?process_id=ORD-1002", &[&session, "lang=en"]).await;
    assert!(audit.contains(r#"title="operation.stalled">Stall detected<"#), "{audit}");
    let audit = page(&app, "/audit?process_id=ORD-1002", &[&session, "lang=ja"]).await;
    assert!(audit.contains("停止を検知") && audit.contains("照合（自動）") && audit.contains("システム"), "{audit}");
}

/// What a person reads on the audit page: the text of its events' table, without the markup, the tooltips (the
/// stored codes) and the page's data for the browser.
fn read_on_the_page(html: &str) -> String {
    let table = html.split(r#"data-testid="audit-events""#).nth(1).unwrap_or_default();
    let table = table.split("</table>").next().unwrap_or_default();
    let mut text = String::new();
    let mut in_tag = false;
    for c in table.chars() {
        match c {
            '<' => in_tag = true,
            '>' => {
                in_tag = false;
                text.push(' ');
            }
            c if !in_tag => text.push(c),
            _ => {}
        }
    }
    html_escape::decode_html_entities(&text).into_owned()
}

/// JSON punctuation, `null`, a stored time (`2026-12-06T00:57:40…`) or an action's code in a text.
fn stored_data_in(text: &str) -> Vec<String> {
    let mut found: Vec<String> =
        ["{\"", "\":", "[{", "null"].iter().filter(|p| text.contains(*p)).map(|p| p.to_string()).collect();
    let bytes = text.as_bytes();
    let digits =
        |range: std::ops::Range<usize>| range.into_iter().all(|i| bytes.get(i).is_some_and(u8::is_ascii_digit));
    for i in 0..bytes.len() {
        if digits(i..i + 4)
            && bytes.get(i + 4) == Some(&b'-')
            && digits(i + 5..i + 7)
            && bytes.get(i + 10) == Some(&b'T')
        {
            found.push(text[i..(i + 19).min(text.len())].to_string());
        }
    }
    let codes = domain::audit_action::AuditAction::ALL.iter().map(|a| a.as_str());
    found.extend(codes.filter(|code| text.contains(code)).map(str::to_string));
    found
}

/// Every event of the demo's histories (requests with their makers, checks, decisions and dispatches, bulk
/// reruns, drills, holds, users) as the audit page shows it, in both languages: words, never stored data.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_audit_page_says_every_recorded_value_in_words_in_both_languages() {
    let app = TestApp::spawn().await;
    backend::demo::load_if_empty(&app.state).await.unwrap().unwrap();
    app.user("kimura", &["auditor"], &[]).await;
    let session = app.sign_in("kimura", PASSWORD).await;
    for lang in ["lang=ja", "lang=en"] {
        let mut before = String::new();
        for _ in 0..20 {
            let html = page(&app, &format!("/audit?routine=1&{before}"), &[&session, lang]).await;
            let read = read_on_the_page(&html);
            assert!(read.len() > 100, "the events are on the page: {html}");
            let mut found = stored_data_in(&read);
            let english = ["record(s)", "idempotency key", "look-up"];
            assert!(lang == "lang=ja" || read.contains("Sales"), "the department's English name");
            if lang == "lang=ja" {
                found.extend(english.iter().filter(|e| read.contains(*e)).map(|e| e.to_string()));
                assert!(!before.is_empty() || read.contains("この冪等キーの記録はありません"), "the evidence in words");
            }
            assert!(found.is_empty(), "{lang}: stored data on the audit page: {found:?} in\n{read}");
            match html.split("before=").nth(1).and_then(|rest| rest.split(['"', '&']).next()) {
                Some(next) => before = format!("before={next}"),
                None => break,
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workflows_and_steps_are_called_by_their_titles_in_the_readers_language_with_the_code_in_small_type() {
    let app = TestApp::spawn().await;
    backend::demo::load_if_empty(&app.state).await.unwrap().unwrap();
    app.user("kimura", &["staff"], &["sales"]).await;
    let session = app.sign_in("kimura", PASSWORD).await;

    let japanese = page(&app, "/operations/ORD-1002", &[&session, "lang=ja"]).await;
    assert!(japanese.contains("受注の取り込み") && japanese.contains("受注の登録") && japanese.contains("AI要約"));
    assert!(japanese.contains(r#"<small class="code"><code>register_order"#), "the code beside the name");
    let english = page(&app, "/operations/ORD-1002", &[&session, "lang=en"]).await;
    assert!(
        english.contains("Order intake") && english.contains("Register the order") && english.contains("AI summary")
    );
    let shown = without_scripts(&english);
    assert!(!shown.contains("受注の登録") && !shown.contains("受注の取り込み"), "no Japanese title in English");

    let board = page(&app, "/", &[&session, "lang=en"]).await;
    assert!(board.contains(">Order intake</td>"), "{board}");
    assert!(board.contains(r#"<option value="order-intake""#), "the filter keeps the code as its value");
    let board = page(&app, "/", &[&session, "lang=ja"]).await;
    assert!(board.contains(">受注の取り込み</td>") && !board.contains(">order-intake</td>"));
}

/// A page without its scripts (the data the browser hydrates with holds the names in both languages).
fn without_scripts(html: &str) -> String {
    html.split("<script").map(|part| part.split_once("</script>").map_or(part, |(_, rest)| rest)).collect()
}
