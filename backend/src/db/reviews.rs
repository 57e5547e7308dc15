//! What the review indicators count, threshold crossings and review sign-offs. The counts come from the
//! records the app keeps anyway (the audit trail, look-ups, rerun requests) plus the refused registrations.
use super::states::{Named, Stored};
use super::{Conn, changed_one, on_conn};
use chrono::{DateTime, NaiveDate, Utc};
use domain::audit_action::AuditAction;
use domain::indicators::{Period, ReviewChange};
use domain::tallies::{COUNTED_ACTIONS, RegistrationRefusal, Tallies};

/// Which departments a count covers: `None` is everything, including refusals that named no department.
pub type Scope<'a> = Option<&'a [String]>;

/// ` AND <column> IN ($3, …)` for a scope (placeholders after the two time bounds).
fn in_scope(column: &str, scope: Scope<'_>) -> String {
    match scope {
        None => String::new(),
        Some([]) => " AND 1 = 0".into(),
        Some(codes) => {
            format!(" AND {column} IN ({})", super::params(2, codes.len()))
        }
    }
}

/// Runs `sql` with the time bounds and the scope's codes bound in order.
macro_rules! scoped {
    ($tx:expr, $sql:expr, $from:expr, $to:expr, $scope:expr, $fetch:ident) => {{
        let sql = $sql;
        on_conn!($tx, |c| {
            let mut q = sqlx::query_as(&sql).bind($from).bind($to);
            for code in $scope.unwrap_or_default() {
                q = q.bind(code);
            }
            q.$fetch(c).await
        })
    }};
}

pub async fn record_refusal(
    tx: &mut Conn,
    api_client_id: i64,
    department: Option<&str>,
    refusal: RegistrationRefusal,
    now: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    on_conn!(tx, |c| sqlx::query(
        "INSERT INTO api_refusals (api_client_id, department, kind, at) VALUES ($1, $2, $3, $4)"
    )
    .bind(api_client_id)
    .bind(department)
    .bind(Stored(refusal))
    .bind(now)
    .execute(c)
    .await
    .map(drop))
}

/// Audit events about a drill's practice operations are not real: the indicators leave them out.
const NOT_A_DRILL: &str = "object_id NOT IN (SELECT process_id FROM operations WHERE drill_id IS NOT NULL)";

/// The records the indicators count about `[from, to)` in `scope`, as they are (`domain::tallies` counts them).
pub async fn tallies(
    tx: &mut Conn,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
    scope: Scope<'_>,
) -> Result<Tallies, sqlx::Error> {
    let w = Window { from, to, scope };
    let (look_ups, failed_look_ups, steps_with_several_records) = look_ups(tx, w).await?;
    Ok(Tallies {
        refusals: refusals(tx, w).await?,
        actions: actions(tx, w).await?,
        look_ups,
        failed_look_ups,
        steps_with_several_records,
        decisions: decisions(tx, w).await?,
        stalls: stalls(tx, w).await?,
    })
}

/// The period and the departments one review counts.
#[derive(Clone, Copy)]
struct Window<'a> {
    from: DateTime<Utc>,
    to: DateTime<Utc>,
    scope: Scope<'a>,
}

/// `name, COUNT(*)` rows, the names read as the domain's.
async fn per_name<T: Named>(tx: &mut Conn, sql: String, w: Window<'_>) -> Result<Vec<(T, i64)>, sqlx::Error> {
    let rows: Vec<(Stored<T>, i64)> = scoped!(tx, sql, w.from, w.to, w.scope, fetch_all)?;
    Ok(rows.into_iter().map(|(name, n)| (name.0, n)).collect())
}

async fn refusals(tx: &mut Conn, w: Window<'_>) -> Result<Vec<(RegistrationRefusal, i64)>, sqlx::Error> {
    let sql = format!(
        "SELECT kind, COUNT(*) FROM api_refusals WHERE at >= $1 AND at < $2{} GROUP BY kind",
        in_scope("department", w.scope)
    );
    per_name(tx, sql, w).await
}

/// Applied step events and dispatch outcomes are audit events: the trail is the history of both.
async fn actions(tx: &mut Conn, w: Window<'_>) -> Result<Vec<(AuditAction, i64)>, sqlx::Error> {
    let names: Vec<String> = COUNTED_ACTIONS.iter().map(|a| format!("'{a}'")).collect();
    let sql = format!(
        "SELECT action, COUNT(*) FROM audit_events WHERE at >= $1 AND at < $2 AND {NOT_A_DRILL}
         AND action IN ({}){} GROUP BY action",
        names.join(", "),
        in_scope("department", w.scope)
    );
    per_name(tx, sql, w).await
}

/// Look-ups made (manual verdicts are not), the failed ones, and steps whose look-up found several records.
async fn look_ups(tx: &mut Conn, w: Window<'_>) -> Result<(i64, i64, i64), sqlx::Error> {
    let sql = format!(
        "SELECT COUNT(*), COALESCE(SUM(CASE WHEN r.verdict = 'lookup_failed' THEN 1 ELSE 0 END), 0),
                COUNT(DISTINCT CASE WHEN r.records > 1 THEN r.step_id END)
         FROM reconciliations r JOIN steps s ON s.id = r.step_id JOIN operations o ON o.id = s.operation_id
         WHERE r.checked_at >= $1 AND r.checked_at < $2 AND r.connector <> 'manual' AND o.drill_id IS NULL{}",
        in_scope("o.department", w.scope)
    );
    scoped!(tx, sql, w.from, w.to, w.scope, fetch_one)
}

async fn decisions(tx: &mut Conn, w: Window<'_>) -> Result<Vec<(DateTime<Utc>, DateTime<Utc>)>, sqlx::Error> {
    let sql = format!(
        "SELECT r.submitted_at, r.decided_at FROM rerun_requests r JOIN operations o ON o.id = r.operation_id
         WHERE r.decided_at >= $1 AND r.decided_at < $2 AND r.submitted_at IS NOT NULL AND o.drill_id IS NULL{}",
        in_scope("o.department", w.scope)
    );
    scoped!(tx, sql, w.from, w.to, w.scope, fetch_all)
}

/// The event each stall was recorded with (its audit event's `after.event`).
async fn stalls(tx: &mut Conn, w: Window<'_>) -> Result<Vec<Option<String>>, sqlx::Error> {
    let sql = format!(
        "SELECT after_json FROM audit_events WHERE action = '{}' AND at >= $1 AND at < $2 AND {NOT_A_DRILL}{}",
        AuditAction::OperationStalled,
        in_scope("department", w.scope)
    );
    let rows: Vec<(Option<String>,)> = scoped!(tx, sql, w.from, w.to, w.scope, fetch_all)?;
    let event =
        |after: &str| serde_json::from_str::<serde_json::Value>(after).ok()?["event"].as_str().map(str::to_string);
    Ok(rows.into_iter().map(|(after,)| after.as_deref().and_then(event)).collect())
}

#[derive(Clone, Debug, sqlx::FromRow)]
pub struct CrossingRow {
    pub id: i64,
    pub department: String,
    pub indicator: String,
    pub period_kind: String,
    pub period_start: NaiveDate,
    pub value: f64,
    pub threshold: f64,
    pub crossed_at: DateTime<Utc>,
    pub cleared_at: Option<DateTime<Utc>>,
}

const CROSSING_COLUMNS: &str =
    "id, department, indicator, period_kind, period_start, value, threshold, crossed_at, cleared_at";

pub async fn open_crossing(
    tx: &mut Conn,
    department: &str,
    indicator: &str,
    period: Period,
) -> Result<Option<CrossingRow>, sqlx::Error> {
    let sql = format!(
        "SELECT {CROSSING_COLUMNS} FROM threshold_crossings
         WHERE department = $1 AND indicator = $2 AND period_kind = $3 AND period_start = $4 AND cleared_at IS NULL"
    );
    on_conn!(tx, |c| sqlx::query_as(&sql)
        .bind(department)
        .bind(indicator)
        .bind(period.kind.as_str())
        .bind(period.start)
        .fetch_optional(c)
        .await)
}

/// Records a crossing; `false` when another instance recorded it first (the partial unique index).
pub async fn insert_crossing(
    tx: &mut Conn,
    department: &str,
    indicator: &str,
    period: Period,
    value: f64,
    threshold: f64,
    now: DateTime<Utc>,
) -> Result<bool, sqlx::Error> {
    changed_one!(tx, |c| {
        sqlx::query(
            "INSERT INTO threshold_crossings
             (department, indicator, period_kind, period_start, value, threshold, crossed_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT DO NOTHING",
        )
        .bind(department)
        .bind(indicator)
        .bind(period.kind.as_str())
        .bind(period.start)
        .bind(value)
        .bind(threshold)
        .bind(now)
        .execute(c)
        .await
    })
}

pub async fn clear_crossing(tx: &mut Conn, id: i64, now: DateTime<Utc>) -> Result<bool, sqlx::Error> {
    changed_one!(tx, |c| sqlx::query(
        "UPDATE threshold_crossings SET cleared_at = $2 WHERE id = $1 AND cleared_at IS NULL"
    )
    .bind(id)
    .bind(now)
    .execute(c)
    .await)
}

/// The crossings of one period (open or cleared), for the review page.
pub async fn crossings_of(tx: &mut Conn, period: Period, scope: Scope<'_>) -> Result<Vec<CrossingRow>, sqlx::Error> {
    let sql = format!(
        "SELECT {CROSSING_COLUMNS} FROM threshold_crossings WHERE period_kind = $1 AND period_start = $2{}
         ORDER BY crossed_at, id",
        in_scope("department", scope)
    );
    scoped!(tx, sql, period.kind.as_str(), period.start, scope, fetch_all)
}

/// Crossings recorded from `since` up to and including `until` (now), newest first.
pub async fn crossings_since(
    tx: &mut Conn,
    since: DateTime<Utc>,
    until: DateTime<Utc>,
    scope: Scope<'_>,
) -> Result<Vec<CrossingRow>, sqlx::Error> {
    let sql = format!(
        "SELECT {CROSSING_COLUMNS} FROM threshold_crossings WHERE crossed_at >= $1 AND crossed_at <= $2{}
         ORDER BY crossed_at DESC, id DESC LIMIT 50",
        in_scope("department", scope)
    );
    scoped!(tx, sql, since, until, scope, fetch_all)
}

#[derive(Clone, Debug, sqlx::FromRow)]
pub struct SignoffRow {
    pub department: String,
    pub period_kind: String,
    pub period_start: NaiveDate,
    pub signed_by: String,
    pub signed_at: DateTime<Utc>,
    pub comment: String,
}

const SIGNOFF_SELECT: &str =
    "SELECT s.department, s.period_kind, s.period_start, u.display_name AS signed_by, s.signed_at, s.comment
     FROM review_signoffs s JOIN users u ON u.id = s.signed_by";

/// Records a sign-off; `false` when the period was already signed off for the department.
pub async fn sign_off(
    tx: &mut Conn,
    department: &str,
    period: Period,
    user_id: i64,
    comment: &str,
    now: DateTime<Utc>,
) -> Result<bool, sqlx::Error> {
    changed_one!(tx, |c| sqlx::query(
        "INSERT INTO review_signoffs (department, period_kind, period_start, signed_by, signed_at, comment)
         VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING"
    )
    .bind(department)
    .bind(period.kind.as_str())
    .bind(period.start)
    .bind(user_id)
    .bind(now)
    .bind(comment)
    .execute(c)
    .await)
}

pub async fn signoff_of(tx: &mut Conn, department: &str, period: Period) -> Result<Option<SignoffRow>, sqlx::Error> {
    let sql = format!("{SIGNOFF_SELECT} WHERE s.department = $1 AND s.period_kind = $2 AND s.period_start = $3");
    on_conn!(tx, |c| sqlx::query_as(&sql)
        .bind(department)
        .bind(period.kind.as_str())
        .bind(period.start)
        .fetch_optional(c)
        .await)
}

/// The department's latest sign-off of an earlier period of the same kind: "the last review".
pub async fn last_signoff_before(
    tx: &mut Conn,
    department: &str,
    period: Period,
) -> Result<Option<SignoffRow>, sqlx::Error> {
    let sql = format!(
        "{SIGNOFF_SELECT} WHERE s.department = $1 AND s.period_kind = $2 AND s.period_start < $3
         ORDER BY s.period_start DESC LIMIT 1"
    );
    on_conn!(tx, |c| sqlx::query_as(&sql)
        .bind(department)
        .bind(period.kind.as_str())
        .bind(period.start)
        .fetch_optional(c)
        .await)
}

/// An incident or prevention action that changed since the last review (the incident reports' tables).
#[derive(Clone, Debug, sqlx::FromRow)]
pub struct IncidentChange {
    #[sqlx(try_from = "Stored<ReviewChange>")]
    pub kind: ReviewChange,
    pub incident_id: i64,
    pub title: String,
    pub detail: Option<String>,
    pub at: DateTime<Utc>,
}

/// Incidents filed and prevention actions finished in `[since, until)`, newest first.
pub async fn incident_changes(
    tx: &mut Conn,
    since: DateTime<Utc>,
    until: DateTime<Utc>,
    scope: Scope<'_>,
) -> Result<Vec<IncidentChange>, sqlx::Error> {
    let sql = format!(
        "SELECT 'incident_filed' AS kind, i.id AS incident_id, i.title, NULL AS detail, i.created_at AS at
         FROM incidents i WHERE i.created_at >= $1 AND i.created_at <= $2{}
         UNION ALL
         SELECT 'action_' || a.status, i.id, i.title, a.description, a.done_at
         FROM prevention_actions a JOIN incidents i ON i.id = a.incident_id
         WHERE a.done_at IS NOT NULL AND a.done_at >= $1 AND a.done_at <= $2{}
         ORDER BY at DESC LIMIT 50",
        in_scope("i.department", scope),
        in_scope("i.department", scope)
    );
    scoped!(tx, sql, since, until, scope, fetch_all)
}
