//! The weekly and monthly review: indicators, what changed since the last review, and the manager's sign-off.
use super::{AppError, DepartmentDto};
use chrono::{DateTime, NaiveDate, Utc};
use domain::indicators::{Indicator, Period, PeriodKind};
use domain::invalid::{Field, Invalid, Rule};
use serde::{Deserialize, Serialize};

/// Which review: one department or all the caller may see, a week or a month, and which one (by a day in it;
/// none: the current one).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReviewQuery {
    pub department: Option<String>,
    pub period: Option<String>,
    pub day: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct IndicatorRow {
    pub indicator: Indicator,
    pub value: Option<f64>,
    pub previous: Option<f64>,
    /// Part and whole of a rate.
    pub fraction: Option<(i64, i64)>,
    /// The configured limit for this department and kind of period (one department only).
    pub threshold: Option<f64>,
    /// When the limit was crossed in this period (and not cleared since).
    pub crossed_at: Option<DateTime<Utc>>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SignoffView {
    pub period_start: NaiveDate,
    pub signed_by: String,
    pub signed_at: DateTime<Utc>,
    pub comment: String,
}

/// One thing that changed since the last review. `kind`: `threshold_crossed`, `incident_filed`, `action_done`,
/// `action_dropped`, `action_overdue`; `subject` is the indicator's key or the incident's title.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ChangeView {
    pub kind: domain::indicators::ReviewChange,
    pub at: DateTime<Utc>,
    pub subject: String,
    pub detail: Option<String>,
    pub link: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ReviewView {
    pub query: ReviewQuery,
    pub department: Option<DepartmentDto>,
    /// The departments the caller may choose.
    pub departments: Vec<DepartmentDto>,
    pub period: Period,
    /// The period's last day (the period ends at the midnight after it).
    pub last_day: NaiveDate,
    pub previous_day: NaiveDate,
    /// `None` when the period is the current one.
    pub next_day: Option<NaiveDate>,
    pub rows: Vec<IndicatorRow>,
    pub stalled_by_event: Vec<(String, i64)>,
    pub signoff: Option<SignoffView>,
    /// The department's latest sign-off of an earlier period, from which the changes are listed.
    pub last_review: Option<SignoffView>,
    pub changes: Vec<ChangeView>,
    /// A manager of the one department shown, and the period not signed off yet.
    pub may_sign_off: bool,
    /// The same query as URL parameters, for the charts and the CSV export.
    pub query_string: String,
    /// The zone whose midnights start the periods.
    pub zone: String,
}

impl ReviewQuery {
    pub fn period_kind(&self) -> Result<PeriodKind, AppError> {
        match self.period.as_deref().map(str::trim).filter(|p| !p.is_empty()) {
            None => Ok(PeriodKind::Week),
            Some(text) => PeriodKind::parse(text)
                .ok_or_else(|| AppError::invalid(Field::Period, Invalid::new(Rule::Unknown, "week or month"))),
        }
    }

    /// The day that picks the period; `None`: today.
    pub fn day(&self) -> Result<Option<NaiveDate>, AppError> {
        match self.day.as_deref().map(str::trim).filter(|d| !d.is_empty()) {
            None => Ok(None),
            Some(text) => text
                .parse()
                .map(Some)
                .map_err(|_| AppError::invalid(Field::Day, Invalid::new(Rule::NotATime, "a date such as 2026-11-30"))),
        }
    }
}
