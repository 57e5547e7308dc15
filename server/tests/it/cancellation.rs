//! A request cut off by the request timeout while it waits for the database must leave nothing behind: a
//! `BEGIN IMMEDIATE` cut off while another writer holds SQLite's lock must not go back to the pool inside its
//! transaction, holding the lock for good (sqlx's worker rolls back a `BEGIN` nobody awaits any more; this holds it
//! to that, as the write path relies on it).
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

/// The same for a write cut off in the middle of a statement: its transaction rolls back and the lock is free.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_cut_off_in_the_middle_of_a_statement_leaves_no_lock_behind() {
    use app::backend::db::Conn;
    let app = TestApp::spawn().await;
    if !app.database_url.starts_with("sqlite:") {
        return;
    }
    for statement in [
        // Rows without end, streamed: the reader goes away between two rows.
        "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT x FROM c",
        // One answer after a long count: the reader goes away while SQLite works.
        "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT 3000000) SELECT count(*) FROM c",
    ] {
        let long = async {
            let mut conn = app.state.db.begin_write().await.unwrap();
            let Conn::Sqlite(handle, _) = &mut conn else { unreachable!("SQLite") };
            sqlx::query(statement).fetch_all(&mut **handle).await
        };
        assert!(tokio::time::timeout(Duration::from_millis(200), long).await.is_err(), "cut off: {statement}");
        for n in 0..6 {
            let write = async {
                let tx = app.state.db.begin_write().await?;
                tx.commit().await
            };
            let done = tokio::time::timeout(Duration::from_secs(15), write).await;
            assert!(matches!(done, Ok(Ok(()))), "write {n} after a cut-off statement ({statement}): {done:?}");
        }
    }
}
