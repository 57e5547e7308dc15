//! A request cut off by the request timeout while it waits for the database must leave nothing behind: a
//! `BEGIN IMMEDIATE` cut off while another writer holds SQLite's lock must not go back to the pool inside its
//! transaction, holding the lock for good (`db::begin` finishes every `BEGIN` in a task of its own; its result,
//! when nobody awaits it, is a transaction dropped, which rolls back).
use crate::harness::TestApp;
use sqlx::Connection;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_cut_off_while_waiting_for_the_lock_leaves_no_lock_behind() {
    let app = TestApp::spawn().await;
    if app.database_file().is_none() {
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
    use backend::db::Conn;
    let app = TestApp::spawn().await;
    if app.database_file().is_none() {
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

/// A caller cut off at any step of beginning a transaction (each await of the pool's `begin`: sending the
/// `BEGIN`, its answer, the check that it opened one) leaves no transaction on any pooled connection. sqlx's own
/// `begin` misses two of these steps: on SQLite after a `BEGIN IMMEDIATE` was answered, on PostgreSQL before its
/// answer was read; the connection then went back to the pool inside the transaction, holding SQLite's write
/// lock for good ("database is locked", then "begin_with at non-zero transaction depth" for everyone after it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_transaction_cut_off_while_it_begins_leaves_no_transaction_behind() {
    let app = TestApp::spawn().await;
    // On PostgreSQL the window is open only until the server's answer arrives: several rounds to meet it.
    for polls in (1..=8).cycle().take(40) {
        for write in [true, false] {
            let begin =
                async { if write { app.state.db.begin_write().await } else { app.state.db.begin_read().await } };
            cut_off_after(begin, polls).await;
            no_pooled_connection_is_inside_a_transaction(&app.state.db, polls, write).await;
        }
    }
}

/// Polls `work` at most `polls` times, then drops it: a caller cut off at that await.
async fn cut_off_after<F: std::future::Future>(work: F, polls: usize) {
    use std::task::Poll;
    let mut work = std::pin::pin!(work);
    let mut polled = 0;
    std::future::poll_fn(|cx| {
        polled += 1;
        match work.as_mut().poll(cx) {
            Poll::Ready(_) => Poll::Ready(()),
            Poll::Pending if polled >= polls => Poll::Ready(()),
            Poll::Pending => Poll::Pending,
        }
    })
    .await
}

/// Takes every connection the pool may hold at once (so none is still on its way back) and asks each, after a
/// statement queued behind any rollback, whether it is inside a transaction.
async fn no_pooled_connection_is_inside_a_transaction(db: &backend::db::Db, polls: usize, write: bool) {
    use backend::db::Db;
    let mut inside = 0;
    match db {
        Db::Sqlite(pool, ..) => {
            let mut all = Vec::new();
            for _ in 0..pool.options().get_max_connections() {
                let mut conn = pool.acquire().await.unwrap();
                sqlx::query("SELECT 1").execute(&mut *conn).await.unwrap();
                inside += usize::from(conn.is_in_transaction());
                all.push(conn);
            }
        }
        Db::Postgres(pool, ..) => {
            let mut all = Vec::new();
            let mut pids = Vec::new();
            for _ in 0..pool.options().get_max_connections() {
                let mut conn = pool.acquire().await.unwrap();
                let (pid,): (i32,) = sqlx::query_as("SELECT pg_backend_pid()").fetch_one(&mut *conn).await.unwrap();
                pids.push(pid);
                all.push(conn);
            }
            // Each has just answered: the server sees it idle, or idle inside a transaction left open.
            let (open,): (i64,) = sqlx::query_as(
                "SELECT count(*) FROM pg_stat_activity WHERE pid = ANY($1) AND state LIKE 'idle in transaction%'",
            )
            .bind(&pids)
            .fetch_one(&mut *all[0])
            .await
            .unwrap();
            inside = usize::try_from(open).unwrap();
        }
    }
    assert_eq!(
        inside,
        0,
        "connections left inside a transaction by a {} begin cut off after {polls} polls",
        if write { "write" } else { "read" }
    );
}
