//! QUALITY 7: the time of a sign-in's answer does not tell which accounts exist.
use crate::harness::TestApp;
use crate::{alone, median};
use backend::services::sign_in::{Attempt, check};
use contract::AppError;

/// One sign-in through the service, as the server function makes it, from `ip`.
async fn attempt(app: &TestApp, username: &str, password: &str, ip: &str) -> Result<(), AppError> {
    let attempt =
        Attempt { username: username.into(), password: password.into(), ip: ip.into(), request_id: None, device: None };
    check(&app.state, attempt).await.map(drop)
}

/// QUALITY 7: an unknown name, a disabled account and a wrong password cost the same work, so the time of the
/// answer does not tell which accounts exist. The three are interleaved in one run, each round starting with
/// another of them, and compared as ratios of medians.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_name_and_a_disabled_account_take_as_long_as_a_wrong_password() {
    const ROUNDS: usize = 12;
    let _alone = alone().await;
    let app = TestApp::spawn().await;
    for i in 0..ROUNDS {
        app.user(&format!("known{i}"), &["staff"], &["sales"]).await;
        let gone = app.user(&format!("gone{i}"), &["staff"], &["sales"]).await;
        let mut tx = app.db().begin_write().await.unwrap();
        backend::db::users::set_disabled_at(&mut tx, gone, Some(chrono::Utc::now()), chrono::Utc::now()).await.unwrap();
        tx.commit().await.unwrap();
    }
    let mut times: [Vec<f64>; 3] = Default::default();
    for i in 0..ROUNDS {
        let names = [format!("known{i}"), format!("nobody{i}"), format!("gone{i}")];
        for case in (0..3).map(|k| (k + i) % 3) {
            let start = std::time::Instant::now();
            let answer = attempt(&app, &names[case], "not-the-password", &format!("192.0.2.{}", 3 * i + case)).await;
            times[case].push(start.elapsed().as_secs_f64());
            assert!(matches!(answer, Err(AppError::Validation(_))), "{}: {answer:?}", names[case]);
        }
    }
    let [wrong, unknown, disabled] = times.map(median);
    for (what, median) in [("an unknown name", unknown), ("a disabled account", disabled)] {
        let ratio = median.max(wrong) / median.min(wrong);
        assert!(ratio <= 4.0 / 3.0, "{what}: median {median:.4} s, a wrong password {wrong:.4} s (ratio {ratio:.2})");
    }
}
