//! QUALITY 24: an unauthenticated caller's webhook costs bounded work, whatever its signature header holds.
use crate::harness::TestApp;
use crate::{alone, median};
use backend::Clock;
use reqwest::StatusCode;

/// A webhook with a 60 KiB body and a ~390 KB header, timed over HTTP.
async fn flood_round(app: &TestApp, body: &str, signature: &str, padding: &str) -> (StatusCode, f64) {
    let started = std::time::Instant::now();
    let timestamp = app.clock.now().timestamp().to_string();
    let sent = app
        .http
        .post(format!("{}/hooks/ai-summary", app.url))
        .header("webhook-id", "msg_flood")
        .header("webhook-timestamp", timestamp)
        .header("webhook-signature", signature)
        .header("x-padding", padding)
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    (sent.status(), started.elapsed().as_secs_f64())
}

/// QUALITY 24, bounded work for unauthenticated callers: a header of a hundred thousand `v1,` candidates costs
/// what one wrong signature costs when both requests carry the same bytes (a ratio of medians in one run).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_header_flooded_with_signatures_is_refused_401_for_the_cost_of_one_wrong_signature() {
    let _alone = alone().await;
    let app = TestApp::spawn().await;
    let body = format!("{{\"pad\":\"{}\"}}", "x".repeat(60 * 1024));
    let size = 390_000;
    let flood: String = "v1,bm90LWl0 ".repeat(size / 12);
    let one = "v1,bm90LWl0";
    let (flood_padding, one_padding) = ("p".repeat(one.len()), "p".repeat(flood.len()));
    let mut rounds: [Vec<f64>; 2] = [Vec::new(), Vec::new()];
    for _ in 0..9 {
        let (status, seconds) = flood_round(&app, &body, &flood, &flood_padding).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
        rounds[0].push(seconds);
        let (status, seconds) = flood_round(&app, &body, one, &one_padding).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
        rounds[1].push(seconds);
    }
    let [flooded, single] = rounds.map(median);
    assert!(flooded / single < 3.0, "the flood took {flooded:.4} s, one wrong signature {single:.4} s");
}
