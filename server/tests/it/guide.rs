//! The user guide in the app: each page's "?" opens its section, in the reader's language, for signed-in users.
use crate::harness::{PASSWORD, TestApp};
use app::ui::help::GuideSection;
use reqwest::StatusCode;

async fn guide(app: &TestApp, language: &str, cookie: Option<&str>) -> (StatusCode, String) {
    let mut request = app.http.get(format!("{}/guide/{language}", app.url));
    if let Some(cookie) = cookie {
        request = request.header("cookie", cookie);
    }
    let answer = request.send().await.unwrap();
    (answer.status(), answer.text().await.unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_section_a_page_links_to_is_in_the_guide_of_each_language() {
    let app = TestApp::spawn().await;
    app.user("kimura", &["staff"], &["sales"]).await;
    let session = app.sign_in("kimura", PASSWORD).await;
    for (language, heading) in [("ja", "利用者ガイド"), ("en", "user guide")] {
        let (status, html) = guide(&app, language, Some(&session)).await;
        assert_eq!(status, StatusCode::OK, "/guide/{language}");
        assert!(html.contains(&format!("<html lang=\"{language}\">")), "{language}: the document's language");
        assert!(html.to_lowercase().contains(&heading.to_lowercase()), "{language}: the guide's title");
        for section in GuideSection::ALL {
            let anchor = format!("id=\"{}\"", section.anchor());
            assert!(html.contains(&anchor), "/guide/{language} has no section {:?} ({anchor})", section);
        }
        // Pictures and the other documents are the repository's: their words stay, nothing points elsewhere.
        assert!(!html.contains("<img") && !html.contains("href=\"../"), "{language}: a picture or a document's link");
        assert!(html.contains("href=\"#board\""), "{language}: the table of contents links inside the guide");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_visitor_who_is_not_signed_in_is_sent_to_sign_in_first() {
    let app = TestApp::spawn().await;
    let answer = app.http.get(format!("{}/guide/ja", app.url)).send().await.unwrap();
    assert!(answer.status().is_redirection(), "{}", answer.status());
    let location = answer.headers()["location"].to_str().unwrap();
    assert!(location.starts_with("/sign-in?next="), "{location}");
}

/// The `href` of the page's stylesheet link.
fn stylesheet(html: &str) -> Option<&str> {
    let rel = html.find("rel=\"stylesheet\"")?;
    let tag = &html[html[..rel].rfind('<')?..];
    let tag = &tag[..tag.find('>')?];
    let href = &tag[tag.find("href=\"")? + 6..];
    Some(&href[..href.find('"')?])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_guide_wears_the_apps_stylesheet_and_leads_back_to_the_app() {
    let app = TestApp::spawn().await;
    app.user("kimura", &["staff"], &["sales"]).await;
    let session = app.sign_in("kimura", PASSWORD).await;
    let board = app.http.get(format!("{}/", app.url)).header("cookie", &session).send().await.unwrap();
    let board = board.text().await.unwrap();
    let (_, guide) = guide(&app, "en", Some(&session)).await;
    let apps = stylesheet(&board).expect("the board links its stylesheet");
    assert!(apps.ends_with(".css"), "{apps}");
    assert_eq!(stylesheet(&guide), Some(apps), "the guide's stylesheet is the pages' own");
    assert!(guide.contains("<a class=\"brand\" href=\"/\">Rerun Gate</a>"), "the header leads back to the app");
}
