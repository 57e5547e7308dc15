//! A request cut off by the request timeout while it waits for the database must leave nothing behind: on SQLite
//! a `BEGIN IMMEDIATE` cut off half-way once left its pooled connection inside the transaction, holding the write
//! lock for good, and every write after it failed with "database is locked" (seen in a browser run on a busy
//! machine). Found and fixed in `db::begin_sqlite`.
use crate::harness::TestApp;
use sqlx::Connection;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_cut_off_while_waiting_for_the_lock_leaves_no_lock_behind() {
    let app = TestApp::spawn().await;
    if !app.database_url.starts_with("sqlite:") {
        return; // PostgreSQL's writers wait on a row lock inside a begun transaction, which rolls back when dropped
    }
    // Another process holds SQLite's write lock.
    let mut other = sqlx::SqliteConnection::connect(&app.database_url).await.unwrap();
    sqlx::query("BEGIN IMMEDIATE").execute(&mut other).await.unwrap();
    let cut_off = tokio::time::timeout(Duration::from_millis(300), app.state.db.begin_write()).await;
    assert!(cut_off.is_err(), "the write waited for the lock and was cut off");
    sqlx::query("ROLLBACK").execute(&mut other).await.unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await; // the cut-off BEGIN runs now, on its connection's worker

    for n in 0..6 {
        let write = async {
            let tx = app.state.db.begin_write().await?;
            tx.commit().await
        };
        let done = tokio::time::timeout(Duration::from_secs(5), write).await;
        assert!(matches!(done, Ok(Ok(()))), "write {n} after the cut-off one: {done:?}");
    }
}
