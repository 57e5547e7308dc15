//! Reviews: a period's indicators with their trend, the threshold crossings (notified once each), what changed
//! since the last review, the manager's sign-off, and the CSV export.
use super::Caller;
use super::audit::record;
use crate::{AppState, db};
use chrono::{DateTime, Days, Utc};
use contract::reviews::{ChangeView, IndicatorRow, ReviewQuery, ReviewView, SignoffView};
use contract::{AppError, DepartmentDto};
use domain::audit::{Actor, AuditEntry, ObjectType, SystemActor};
use domain::audit_action::AuditAction;
use domain::conflict::Conflict;
use domain::indicators::{Counts, Indicator, Period, PeriodKind, ReviewChange, midnight, threshold_for};
use domain::invalid::{Field, Invalid, Rule};
use domain::notifications::Notice;
use domain::rights::Act;
use serde_json::json;
use words::i18n::Locale;
use words::round;

/// How many periods a trend shows (the chart's x axis and the CSV's rows per indicator).
pub const TREND_PERIODS: usize = 12;

/// A review's department(s) and period, checked against what the caller may see.
pub struct Resolved {
    /// `None`: every department (auditors).
    pub scope: Option<Vec<String>>,
    pub department: Option<String>,
    pub period: Period,
    pub today: chrono::NaiveDate,
}

pub fn resolve(state: &AppState, caller: &Caller, query: &ReviewQuery) -> Result<Resolved, AppError> {
    let kind = query.period_kind()?;
    let today = state.clock.now().with_timezone(&state.config.review_zone()).date_naive();
    let day = query.day()?.unwrap_or(today);
    if day > today {
        return Err(AppError::invalid(
            Field::Day,
            Invalid::new(Rule::NotStartedYet, "a period that has not started has nothing to review"),
        ));
    }
    let department = query.department.as_deref().map(str::trim).filter(|d| !d.is_empty());
    let scope = match department {
        Some(code) if caller.may_read(code) && state.config.department(code).is_some() => Some(vec![code.to_string()]),
        Some(_) => return Err(AppError::NotFound),
        None => caller.readable_departments(),
    };
    Ok(Resolved { scope, department: department.map(str::to_string), period: Period::containing(kind, day), today })
}

/// The counts of each period of the trend ending at `period`, oldest first.
pub async fn trend(
    state: &AppState,
    scope: Option<&[String]>,
    period: Period,
) -> Result<Vec<(Period, Counts)>, AppError> {
    let zone = state.config.review_zone();
    let mut tx = state.db.begin_read().await?;
    let mut out = Vec::with_capacity(TREND_PERIODS);
    for p in period.trend(TREND_PERIODS) {
        let (from, to) = p.bounds(zone);
        out.push((p, Counts::of(db::reviews::tallies(&mut tx, from, to, scope).await?)));
    }
    Ok(out)
}

pub async fn review(state: &AppState, caller: &Caller, query: &ReviewQuery) -> Result<ReviewView, AppError> {
    let r = resolve(state, caller, query)?;
    let scope = r.scope.as_deref();
    let trend = trend(state, scope, r.period).await?;
    let (current, previous) = (&trend[trend.len() - 1].1, &trend[trend.len() - 2].1);
    let now = state.clock.now();
    let mut tx = state.db.begin_read().await?;
    let crossings = db::reviews::crossings_of(&mut tx, r.period, scope).await?;
    let rows = Indicator::ALL
        .into_iter()
        .map(|indicator| {
            let threshold = r
                .department
                .as_deref()
                .and_then(|d| threshold_for(&state.config.thresholds, indicator, d, r.period.kind))
                .map(|t| t.above);
            let crossed_at = crossings
                .iter()
                .filter(|c| r.department.is_some() && c.indicator == indicator.key() && c.cleared_at.is_none())
                .map(|c| c.crossed_at)
                .next();
            IndicatorRow {
                indicator,
                value: current.value(indicator),
                previous: previous.value(indicator),
                fraction: current.fraction(indicator),
                threshold,
                crossed_at,
            }
        })
        .collect();
    let (signoff, last_review) = match &r.department {
        Some(d) => (
            db::reviews::signoff_of(&mut tx, d, r.period).await?.map(signoff_view),
            db::reviews::last_signoff_before(&mut tx, d, r.period).await?.map(signoff_view),
        ),
        None => (None, None),
    };
    // Since the last review; without one, since the period began.
    let since = last_review.as_ref().map_or_else(|| r.period.bounds(state.config.review_zone()).0, |s| s.signed_at);
    let changes = changes_since(&mut tx, since, now, r.today, state.config.review_zone(), scope).await?;
    let departments = state
        .config
        .departments
        .iter()
        .filter(|d| caller.may_read(&d.code))
        .map(|d| DepartmentDto { code: d.code.clone(), name: d.name.clone(), name_en: d.name_en.clone() })
        .collect::<Vec<_>>();
    let department = r.department.as_ref().and_then(|code| departments.iter().find(|d| d.code == *code).cloned());
    let may_sign_off = signoff.is_none() && r.department.as_deref().is_some_and(|d| is_owner(caller, d));
    let current_period = Period::containing(r.period.kind, r.today);
    Ok(ReviewView {
        query_string: query_string(r.department.as_deref(), r.period),
        query: query.clone(),
        department,
        departments,
        period: r.period,
        last_day: r.period.end() - Days::new(1),
        previous_day: r.period.previous().start,
        next_day: (r.period != current_period).then(|| r.period.end()),
        rows,
        stalled_by_event: current.stalled_by_event.iter().map(|(e, n)| (e.clone(), *n)).collect(),
        signoff,
        last_review,
        changes,
        may_sign_off,
        zone: state.config.review_time_zone.clone(),
    })
}

/// A manager who belongs to the department (an auditor's reach is not ownership).
fn is_owner(caller: &Caller, department: &str) -> bool {
    caller.may_act(Act::SignOffReview, department)
}

fn signoff_view(row: db::reviews::SignoffRow) -> SignoffView {
    SignoffView {
        period_start: row.period_start,
        signed_by: row.signed_by,
        signed_at: row.signed_at,
        comment: row.comment,
    }
}

pub fn query_string(department: Option<&str>, period: Period) -> String {
    let mut query = url::form_urlencoded::Serializer::new(String::new());
    if let Some(d) = department {
        query.append_pair("department", d);
    }
    query.append_pair("period", period.kind.as_str()).append_pair("day", &period.start.to_string());
    query.finish()
}

async fn changes_since(
    tx: &mut db::Conn,
    since: DateTime<Utc>,
    now: DateTime<Utc>,
    today: chrono::NaiveDate,
    zone: chrono_tz::Tz,
    scope: Option<&[String]>,
) -> Result<Vec<ChangeView>, AppError> {
    let mut changes: Vec<ChangeView> = db::reviews::crossings_since(tx, since, now, scope)
        .await?
        .into_iter()
        .map(|c| ChangeView {
            kind: ReviewChange::ThresholdCrossed,
            at: c.crossed_at,
            subject: c.indicator,
            // Numbers, a department code and a date: the same in every language.
            detail: Some(format!("{} > {} ({}, {})", round(c.value), round(c.threshold), c.department, c.period_start)),
            link: None,
        })
        .collect();
    let incidents = db::reviews::incident_changes(tx, since, now, scope).await?;
    changes.extend(incidents.into_iter().map(|i| ChangeView {
        kind: i.kind,
        at: i.at,
        subject: i.title,
        detail: i.detail,
        link: Some(format!("/incidents/{}", i.incident_id)),
    }));
    // Overdue actions are listed however old: they are what a review must not miss.
    let overdue = db::incidents::overdue(tx, scope, today, 50).await?;
    changes.extend(overdue.into_iter().map(|a| ChangeView {
        kind: ReviewChange::ActionOverdue,
        at: midnight(a.due_on + Days::new(1), zone),
        subject: a.title,
        detail: Some(format!("{} ({})", a.description, a.owner)),
        link: Some(format!("/incidents/{}", a.incident_id)),
    }));
    changes.sort_by_key(|c| std::cmp::Reverse(c.at));
    Ok(changes)
}

pub async fn sign_off(state: &AppState, caller: &Caller, query: &ReviewQuery, comment: &str) -> Result<(), AppError> {
    let r = resolve(state, caller, query)?;
    let Some(department) = r.department else {
        return Err(AppError::invalid(
            Field::Department,
            Invalid::new(Rule::OneDepartment, "a review is signed off for one department"),
        ));
    };
    if !is_owner(caller, &department) {
        tracing::warn!(user = %caller.user().username, %department, "review sign-off refused");
        return Err(AppError::Forbidden);
    }
    let comment = domain::holds::reason(comment).map_err(|e| AppError::invalid(Field::Comment, e))?;
    let now = state.clock.now();
    let mut tx = state.db.begin_write().await?;
    if !db::reviews::sign_off(&mut tx, &department, r.period, caller.user_id(), &comment, now).await? {
        return Err(AppError::conflict(Conflict::AlreadySignedOff, "this period's review was already signed off"));
    }
    let object = format!("{department}/{}/{}", r.period.kind.as_str(), r.period.start);
    let entry = AuditEntry::new(caller.actor(), AuditAction::ReviewSignedOff, ObjectType::Review, object)
        .department(Some(&department))
        .after(json!({"period": r.period.kind.as_str(), "start": r.period.start.to_string(), "comment": comment}));
    record(&mut tx, entry, caller.request_id.as_deref(), now).await?;
    tx.commit().await?;
    Ok(())
}

/// Compares this week's and month's indicators of each department with the configured thresholds: a new crossing
/// is recorded and the owners are told, once; a value back at or below the limit clears it, so that the next
/// crossing is told again. Returns how many crossings were new.
pub async fn check_thresholds(state: &AppState) -> Result<usize, AppError> {
    let now = state.clock.now();
    let zone = state.config.review_zone();
    let mut crossed = 0;
    for kind in [PeriodKind::Week, PeriodKind::Month] {
        let period = Period::current(kind, now, zone);
        let (from, to) = period.bounds(zone);
        for department in &state.config.departments {
            let limits: Vec<_> = Indicator::ALL
                .into_iter()
                .filter_map(|i| threshold_for(&state.config.thresholds, i, &department.code, kind))
                .collect();
            if limits.is_empty() {
                continue;
            }
            let scope = [department.code.clone()];
            let counts =
                Counts::of(db::reviews::tallies(&mut state.db.begin_read().await?, from, to, Some(&scope)).await?);
            for limit in limits {
                let value = counts.value(limit.indicator);
                if check_one(state, &department.code, period, limit, value, now).await? {
                    crossed += 1;
                }
            }
        }
    }
    Ok(crossed)
}

/// One limit of one department: records (and tells) a crossing or clears it, in one transaction with its audit.
async fn check_one(
    state: &AppState,
    department: &str,
    period: Period,
    limit: &domain::indicators::Threshold,
    value: Option<f64>,
    now: DateTime<Utc>,
) -> Result<bool, AppError> {
    let key = limit.indicator.key();
    let mut tx = state.db.begin_write().await?;
    let open = db::reviews::open_crossing(&mut tx, department, key, period).await?;
    let object = format!("{department}/{key}/{}/{}", period.kind.as_str(), period.start);
    let facts = json!({"indicator": key, "value": value, "threshold": limit.above,
                       "period": period.kind.as_str(), "start": period.start.to_string()});
    let actor = Actor::system(SystemActor::Indicators);
    match (limit.crossed_by(value), open) {
        (true, None) => {
            let value = value.unwrap_or_default();
            if !db::reviews::insert_crossing(&mut tx, department, key, period, value, limit.above, now).await? {
                return Ok(false);
            }
            let entry = AuditEntry::new(actor, AuditAction::IndicatorThresholdCrossed, ObjectType::Indicator, object)
                .department(Some(department))
                .after(facts);
            record(&mut tx, entry, None, now).await?;
            let notice = Notice::ThresholdCrossed {
                indicator: limit.indicator,
                value,
                above: limit.above,
                period: period.kind,
                start: period.start,
            };
            let link = format!("/reviews?{}", query_string(Some(department), period));
            let to = (department, ReviewChange::ThresholdCrossed.as_str());
            super::notifications::notify_owners(&mut tx, state, to, &notice, &link, now).await?;
            tx.commit().await?;
            tracing::info!(%department, indicator = key, value, threshold = limit.above, "threshold crossed");
            Ok(true)
        }
        (false, Some(crossing)) => {
            if db::reviews::clear_crossing(&mut tx, crossing.id, now).await? {
                let entry =
                    AuditEntry::new(actor, AuditAction::IndicatorThresholdCleared, ObjectType::Indicator, object)
                        .department(Some(department))
                        .after(facts);
                record(&mut tx, entry, None, now).await?;
                tx.commit().await?;
            }
            Ok(false)
        }
        _ => Ok(false),
    }
}

/// How a review's CSV says its values: in the reader's words when its headings are (people), else as codes
/// (tools: `columns=codes`).
struct Said<'a> {
    headings: Option<Locale>,
    state: &'a AppState,
}

impl Said<'_> {
    /// The review's department (`all` for every department).
    fn department(&self, code: Option<&str>) -> String {
        match (code, self.headings) {
            (Some(code), Some(l)) => self.state.config.department_name(code, l == Locale::en),
            (code, _) => code.unwrap_or("all").to_string(),
        }
    }

    fn indicator(&self, indicator: Indicator) -> &'static str {
        self.headings.map_or(indicator.key(), |l| words::indicator_label_in(l, indicator))
    }

    fn stalled(&self, event: &str) -> String {
        match self.headings {
            Some(l) => format!("{}: {}", self.indicator(Indicator::Stalled), words::event_label_in(l, event)),
            None => format!("stalled:{event}"),
        }
    }
}

/// The CSV export of a review: every indicator of every period of the trend, then the stalls per event.
/// `headings`: the heading row's language (`None`: the columns' codes).
pub async fn export_csv(
    state: &AppState,
    caller: &Caller,
    query: &ReviewQuery,
    headings: Option<Locale>,
) -> Result<Vec<u8>, AppError> {
    let r = resolve(state, caller, query)?;
    let trend = trend(state, r.scope.as_deref(), r.period).await?;
    let scope_name = r.department.clone().unwrap_or_else(|| "all".into());
    let said = Said { headings, state };
    let scope = said.department(r.department.as_deref());
    let mut out = csv::Writer::from_writer(Vec::new());
    out.write_record(words::columns::header_in(headings, &domain::indicators::REVIEW_CSV_COLUMNS))
        .map_err(|e| AppError::internal("review export", e))?;
    for (period, counts) in &trend {
        let (start, end) = (period.start.to_string(), period.end().to_string());
        for indicator in Indicator::ALL {
            let (part, whole) = counts
                .fraction(indicator)
                .map_or((String::new(), String::new()), |(p, w)| (p.to_string(), w.to_string()));
            let threshold = r
                .department
                .as_deref()
                .and_then(|d| threshold_for(&state.config.thresholds, indicator, d, period.kind))
                .map_or(String::new(), |t| t.above.to_string());
            let value = counts.value(indicator).map_or(String::new(), round);
            let unit = serde_json::to_value(indicator.unit())
                .ok()
                .and_then(|u| u.as_str().map(str::to_string))
                .unwrap_or_default();
            out.write_record([
                period.kind.as_str(),
                &start,
                &end,
                &scope,
                said.indicator(indicator),
                &unit,
                &value,
                &part,
                &whole,
                &threshold,
            ])
            .map_err(|e| AppError::internal("review export", e))?;
        }
        for (event, n) in &counts.stalled_by_event {
            out.write_record([
                period.kind.as_str(),
                &start,
                &end,
                &scope,
                &said.stalled(event),
                "count",
                &n.to_string(),
                "",
                "",
                "",
            ])
            .map_err(|e| AppError::internal("review export", e))?;
        }
    }
    let bytes = out.into_inner().map_err(|e| AppError::internal("review export", e.into_error()))?;
    let now = state.clock.now();
    let mut tx = state.db.begin_write().await?;
    let entry = AuditEntry::new(
        caller.actor(),
        AuditAction::ReviewExported,
        ObjectType::Review,
        format!("{scope_name}/{}/{}", r.period.kind.as_str(), r.period.start),
    )
    .department(r.department.as_deref())
    .after(json!({"format": "csv", "periods": trend.len(), "bytes": bytes.len()}));
    record(&mut tx, entry, caller.request_id.as_deref(), now).await?;
    tx.commit().await?;
    Ok(bytes)
}
