//! One render per page (issue 22): the server builds each page once per request. Every resource a render
//! creates is sent in the page's trailer (`__RESOLVED_RESOURCES[n]`), so a page built three times sends its
//! resources three times.
use crate::harness::{PASSWORD, TestApp};

/// The resources a page's HTML carries for its hydration.
fn resources_sent(page: &str) -> usize {
    page.matches("__RESOLVED_RESOURCES[").count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_page_is_rendered_once_its_resources_sent_once() {
    let app = TestApp::spawn().await;
    app.user("suzuki", &["manager"], &["sales"]).await;
    let cookie = app.sign_in("suzuki", PASSWORD).await;
    // The layout's two (the user, the unread count) and the page's one; the board's also names the workflows.
    for (path, resources) in [("/", 4), ("/batches", 3), ("/approvals", 3), ("/incidents", 3), ("/notifications", 3)] {
        let page = app.http.get(format!("{}{path}", app.url)).header("cookie", &cookie).send().await.unwrap();
        let page = page.text().await.unwrap();
        assert_eq!(resources_sent(&page), resources, "{path}: the page was rendered more than once");
    }
}
