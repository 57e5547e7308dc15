//! The stalled board at scale: 1,000,000 operations, 100,000 of them stalled. Its first page and a deep keyset
//! page through the real stack (session cookie, server function, counts per event, JSON) against a bare read of
//! the same rows serialised to JSON, p50 and p95 of each.
use backend::db::operations::{BoardQuery, stalled_page};
use backend::{AppState, Db};
use chrono::Utc;
use domain::audit::Actor;
use serde_json::json;
use std::time::Instant;

const EVENTS: [&str; 10] = [
    "auth_expired",
    "rate_limited",
    "temporary_failure",
    "no_response",
    "duplicate_notification",
    "stale_notification",
    "partial_success",
    "ai_in_progress",
    "cancel_requested",
    "result_unknown",
];
const SAMPLES: usize = 200;

pub struct Timing {
    pub p50_ms: f64,
    pub p95_ms: f64,
}

pub struct Figures {
    pub first: Timing,
    pub first_bare: Timing,
    pub deep: Timing,
    pub deep_bare: Timing,
    pub deep_position: usize,
}

/// `count` operations straight into the table (test data, many rows per statement); every tenth stalled, in
/// the two departments by turns, with the ten events by turns.
pub async fn fill(db: &Db, count: usize) -> anyhow::Result<()> {
    const ROWS: usize = 1_000; // 9 values each
    let now = Utc::now();
    let mut written = 0;
    while written < count {
        let n = ROWS.min(count - written);
        let values: Vec<String> = (0..n)
            .map(|r| format!("({})", (1..=9).map(|c| format!("${}", r * 9 + c)).collect::<Vec<_>>().join(",")))
            .collect();
        let sql = format!(
            "INSERT INTO operations
                 (process_id, workflow, workflow_version, department, status, event, failure_class, created_at,
                 updated_at)
             VALUES {}",
            values.join(",")
        );
        let rows: Vec<(String, &str, Option<&str>)> = (written..written + n)
            .map(|k| {
                let stalled = k % 10 == 0;
                let status = if stalled { "stalled" } else { "completed" };
                (format!("SCALE-{k}"), status, stalled.then(|| EVENTS[(k / 10) % EVENTS.len()]))
            })
            .collect();
        let mut tx = db.begin_write().await?;
        macro_rules! insert {
            ($conn:expr) => {{
                let mut q = sqlx::query(&sql);
                for (k, (id, status, event)) in rows.iter().enumerate() {
                    let department = if (written + k) % 20 < 10 { "sales" } else { "billing" };
                    q = q
                        .bind(id)
                        .bind(super::WORKFLOW)
                        .bind("bench")
                        .bind(department)
                        .bind(*status)
                        .bind(*event)
                        .bind(event.map(|_| "outside_service_outage"))
                        .bind(now)
                        .bind(now);
                }
                q.execute($conn).await?;
            }};
        }
        match &mut tx {
            backend::db::Conn::Sqlite(t, _) => insert!(&mut **t),
            backend::db::Conn::Postgres(t, _) => insert!(&mut **t),
        }
        tx.commit().await?;
        written += n;
    }
    Ok(())
}

fn timing(mut millis: Vec<f64>) -> Timing {
    millis.sort_by(f64::total_cmp);
    let at = |p: f64| millis[((millis.len() - 1) as f64 * p).round() as usize];
    Timing { p50_ms: at(0.5), p95_ms: at(0.95) }
}

/// The board of a staff member of sales (about 50,000 stalled operations visible), served on `base`.
pub async fn measure(state: &AppState, base: &str) -> anyhow::Result<Figures> {
    let http = reqwest::Client::new();
    let cookie = signed_in_staff(state, &http, base).await?;
    // A deep page: the keyset cursor of the sales operation 40,000 places down the board.
    let deep_position = 40_000;
    let sales = ["sales".to_string()];
    let mut query = BoardQuery {
        departments: Some(&sales),
        workflow: None,
        event: None,
        created_before: None,
        after_id: 0,
        limit: 51,
    };
    let cursor = {
        let mut tx = state.db.begin_read().await?;
        let mut after = 0;
        for _ in 0..deep_position / 1_000 {
            query.after_id = after;
            query.limit = 1_000;
            after = stalled_page(&mut tx, &query).await?.last().map(|r| r.id).unwrap_or(after);
        }
        after
    };
    query.limit = 51;
    let mut figures = Vec::new();
    for after in [None, Some(cursor)] {
        let (mut board, mut bare) = (Vec::with_capacity(SAMPLES), Vec::with_capacity(SAMPLES));
        for _ in 0..SAMPLES {
            board.push(board_page(&http, base, &cookie, after).await?);
            let started = Instant::now();
            query.after_id = after.unwrap_or(0);
            let rows = stalled_page(&mut state.db.begin_read().await?, &query).await?;
            let json = serde_json::to_vec(&rows)?;
            anyhow::ensure!(!json.is_empty());
            bare.push(started.elapsed().as_secs_f64() * 1e3);
        }
        figures.push((timing(board), timing(bare)));
    }
    let (deep, deep_bare) = figures.pop().expect("two");
    let (first, first_bare) = figures.pop().expect("two");
    Ok(Figures { first, first_bare, deep, deep_bare, deep_position })
}

/// A new staff member of sales, signed in: the session cookie.
async fn signed_in_staff(state: &AppState, http: &reqwest::Client, base: &str) -> anyhow::Result<String> {
    let username = format!("bench-{}", uuid::Uuid::new_v4().simple());
    let password = "kumo-ame-yuki-2026-bench";
    let new = contract::admin::NewUser {
        username: username.clone(),
        display_name: "Bench".into(),
        password: password.into(),
        roles: vec![domain::roles::Role::Staff],
        departments: vec!["sales".into()],
        memberships: Vec::new(),
        email: format!("{username}@example.jp"),
    };
    backend::services::users::add(state, Actor::system(domain::audit::SystemActor::CommandLine), None, new)
        .await
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let signed_in = http
        .post(format!("{base}/api/sign_in"))
        .form(&[("username", username.as_str()), ("password", password)])
        .send()
        .await?;
    let cookie = signed_in
        .headers()
        .get_all("set-cookie")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find(|c| c.contains("rerun_gate_session="))
        .and_then(|c| c.split(';').next())
        .ok_or_else(|| anyhow::anyhow!("no session cookie after sign-in"))?
        .to_string();
    Ok(cookie)
}

/// One board page through the server function, after `after`: the milliseconds it took.
async fn board_page(http: &reqwest::Client, base: &str, cookie: &str, after: Option<i64>) -> anyhow::Result<f64> {
    let started = Instant::now();
    let answer = http
        .post(format!("{base}/api/board/stalled"))
        .header("cookie", cookie)
        .header("content-type", "application/json")
        .body(json!({"filter": {"after": after}}).to_string())
        .send()
        .await?;
    anyhow::ensure!(answer.status().is_success(), "board: {}", answer.status());
    let page: serde_json::Value = answer.json().await?;
    anyhow::ensure!(page["rows"].as_array().is_some_and(|r| r.len() == 50), "a full page");
    Ok(started.elapsed().as_secs_f64() * 1e3)
}
