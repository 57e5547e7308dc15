//! Risk indicators for the weekly and monthly reviews (SPEC "Reviews and indicators"): what is counted, how a
//! value is computed from the counts, and when a threshold is crossed. Periods start at midnight in the review
//! time zone (Tokyo by default): weeks on Monday, months on the 1st.
use crate::names::named;
use chrono::{DateTime, Datelike, Days, Months, NaiveDate, TimeZone, Utc};
use chrono_tz::Tz;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PeriodKind {
    Week,
    Month,
}

impl PeriodKind {
    pub fn as_str(self) -> &'static str {
        match self {
            PeriodKind::Week => "week",
            PeriodKind::Month => "month",
        }
    }

    pub fn parse(text: &str) -> Option<PeriodKind> {
        match text {
            "week" => Some(PeriodKind::Week),
            "month" => Some(PeriodKind::Month),
            _ => None,
        }
    }
}

/// One week or month, named by its first day.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Period {
    pub kind: PeriodKind,
    pub start: NaiveDate,
}

impl Period {
    /// The week or month that holds `day`.
    pub fn containing(kind: PeriodKind, day: NaiveDate) -> Period {
        let start = match kind {
            PeriodKind::Week => day - Days::new(u64::from(day.weekday().num_days_from_monday())),
            PeriodKind::Month => day.with_day(1).expect("every month has a 1st"),
        };
        Period { kind, start }
    }

    /// The period running at `now` in `zone`.
    pub fn current(kind: PeriodKind, now: DateTime<Utc>, zone: Tz) -> Period {
        Period::containing(kind, now.with_timezone(&zone).date_naive())
    }

    /// The first day after the period.
    pub fn end(self) -> NaiveDate {
        match self.kind {
            PeriodKind::Week => self.start + Days::new(7),
            PeriodKind::Month => self.start + Months::new(1),
        }
    }

    pub fn previous(self) -> Period {
        let start = match self.kind {
            PeriodKind::Week => self.start - Days::new(7),
            PeriodKind::Month => self.start - Months::new(1),
        };
        Period { kind: self.kind, start }
    }

    /// This period and the `count - 1` before it, oldest first (a chart's x axis).
    pub fn trend(self, count: usize) -> Vec<Period> {
        let mut periods = vec![self];
        while periods.len() < count {
            let oldest = *periods.last().expect("not empty");
            periods.push(oldest.previous());
        }
        periods.reverse();
        periods
    }

    /// The instants the period covers, `[from, to)`.
    pub fn bounds(self, zone: Tz) -> (DateTime<Utc>, DateTime<Utc>) {
        (midnight(self.start, zone), midnight(self.end(), zone))
    }
}

/// Midnight of `day` in `zone` (the first instant of the day where a shift skips midnight).
pub fn midnight(day: NaiveDate, zone: Tz) -> DateTime<Utc> {
    let local = day.and_hms_opt(0, 0, 0).expect("midnight exists");
    match zone.from_local_datetime(&local) {
        chrono::LocalResult::Single(t) | chrono::LocalResult::Ambiguous(t, _) => t.with_timezone(&Utc),
        chrono::LocalResult::None => zone.from_utc_datetime(&local).with_timezone(&Utc),
    }
}

named! {
    /// What changed since the last review, as the review page lists it.
    pub enum ReviewChange {
        ThresholdCrossed => "threshold_crossed",
        IncidentFiled => "incident_filed",
        /// A prevention action finished: done, or dropped (`action_` and its status).
        ActionDone => "action_done",
        ActionDropped => "action_dropped",
        /// A prevention action past its due day, listed however old.
        ActionOverdue => "action_overdue",
    }
}

/// The columns of a review's CSV export (their codes; the heading row says them in the reader's words).
pub const REVIEW_CSV_COLUMNS: [&str; 10] =
    ["period", "start", "end", "department", "indicator", "unit", "value", "part", "whole", "threshold"];

/// The indicators of a review, in the order the page shows them. Their keys name them in the configuration's
/// thresholds, the CSV export and the chart legends.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Indicator {
    /// Registrations refused because they carried no process ID.
    MissingProcessId,
    /// Registrations refused because their Idempotency-Key had been used with another body (409).
    IdempotencyCollisions,
    /// Failed or unknown step outcomes and failed look-ups, of all step outcomes and look-ups (%).
    OutsideApiErrorRate,
    /// Steps whose look-up found more than one record for one key.
    DoubleSendFlags,
    /// Double sends of all sends (completed steps), in %.
    DoubleSendRatio,
    /// Reruns that ended in an error of all reruns that were sent or ended (%).
    RerunErrorRate,
    /// Minutes from a request's submission to its decision: median and 90th percentile.
    ApprovalLatencyMedian,
    ApprovalLatencyP90,
    /// Operations that stalled (all events; the page breaks them down per event).
    Stalled,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Unit {
    Count,
    Percent,
    Minutes,
}

impl Indicator {
    pub const ALL: [Indicator; 9] = [
        Indicator::MissingProcessId,
        Indicator::IdempotencyCollisions,
        Indicator::OutsideApiErrorRate,
        Indicator::DoubleSendFlags,
        Indicator::DoubleSendRatio,
        Indicator::RerunErrorRate,
        Indicator::ApprovalLatencyMedian,
        Indicator::ApprovalLatencyP90,
        Indicator::Stalled,
    ];

    pub fn key(self) -> &'static str {
        match self {
            Indicator::MissingProcessId => "missing_process_id",
            Indicator::IdempotencyCollisions => "idempotency_collisions",
            Indicator::OutsideApiErrorRate => "outside_api_error_rate",
            Indicator::DoubleSendFlags => "double_send_flags",
            Indicator::DoubleSendRatio => "double_send_ratio",
            Indicator::RerunErrorRate => "rerun_error_rate",
            Indicator::ApprovalLatencyMedian => "approval_latency_median",
            Indicator::ApprovalLatencyP90 => "approval_latency_p90",
            Indicator::Stalled => "stalled",
        }
    }

    pub fn parse(key: &str) -> Option<Indicator> {
        Indicator::ALL.into_iter().find(|i| i.key() == key)
    }

    pub fn unit(self) -> Unit {
        match self {
            Indicator::OutsideApiErrorRate | Indicator::DoubleSendRatio | Indicator::RerunErrorRate => Unit::Percent,
            Indicator::ApprovalLatencyMedian | Indicator::ApprovalLatencyP90 => Unit::Minutes,
            _ => Unit::Count,
        }
    }
}

/// What happened in one period, in one department or several together (counts add up; latencies pool).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Counts {
    pub missing_process_id: i64,
    pub idempotency_collisions: i64,
    /// Step outcomes reported (succeeded, failed, unknown) and look-ups made.
    pub outside_calls: i64,
    /// Of those: failed or unknown outcomes, and failed look-ups.
    pub outside_errors: i64,
    /// Steps completed (each a send to an outside system).
    pub sends: i64,
    /// Steps whose look-up found more than one record for the key.
    pub double_sends: i64,
    /// Reruns whose dispatch ended: sent, or refused, gone, exhausted or with an unknown outcome.
    pub reruns_ended: i64,
    /// Of those, the ones that did not end sent.
    pub reruns_failed: i64,
    /// Seconds from submission to decision, one per decided request.
    pub approval_seconds: Vec<i64>,
    pub stalled_by_event: BTreeMap<String, i64>,
}

impl Counts {
    pub fn add(&mut self, other: &Counts) {
        self.missing_process_id += other.missing_process_id;
        self.idempotency_collisions += other.idempotency_collisions;
        self.outside_calls += other.outside_calls;
        self.outside_errors += other.outside_errors;
        self.sends += other.sends;
        self.double_sends += other.double_sends;
        self.reruns_ended += other.reruns_ended;
        self.reruns_failed += other.reruns_failed;
        self.approval_seconds.extend_from_slice(&other.approval_seconds);
        for (event, n) in &other.stalled_by_event {
            *self.stalled_by_event.entry(event.clone()).or_default() += n;
        }
    }

    /// One indicator's value; `None` when there is nothing to divide by or no decision to measure.
    pub fn value(&self, indicator: Indicator) -> Option<f64> {
        let minutes = |p: f64| percentile(&self.approval_seconds, p).map(|s| s / 60.0);
        match indicator {
            Indicator::MissingProcessId => Some(self.missing_process_id as f64),
            Indicator::IdempotencyCollisions => Some(self.idempotency_collisions as f64),
            Indicator::OutsideApiErrorRate => percent(self.outside_errors, self.outside_calls),
            Indicator::DoubleSendFlags => Some(self.double_sends as f64),
            Indicator::DoubleSendRatio => percent(self.double_sends, self.sends),
            Indicator::RerunErrorRate => percent(self.reruns_failed, self.reruns_ended),
            Indicator::ApprovalLatencyMedian => minutes(50.0),
            Indicator::ApprovalLatencyP90 => minutes(90.0),
            Indicator::Stalled => Some(self.stalled_by_event.values().sum::<i64>() as f64),
        }
    }

    /// The fraction behind a rate, for the page and the export (`None` for counts and latencies).
    pub fn fraction(&self, indicator: Indicator) -> Option<(i64, i64)> {
        match indicator {
            Indicator::OutsideApiErrorRate => Some((self.outside_errors, self.outside_calls)),
            Indicator::DoubleSendRatio => Some((self.double_sends, self.sends)),
            Indicator::RerunErrorRate => Some((self.reruns_failed, self.reruns_ended)),
            _ => None,
        }
    }
}

fn percent(part: i64, whole: i64) -> Option<f64> {
    (whole > 0).then(|| part as f64 * 100.0 / whole as f64)
}

/// The `p`th percentile with linear interpolation between the closest ranks (the median of 10 and 20 is 15).
pub fn percentile(values: &[i64], p: f64) -> Option<f64> {
    let mut sorted = values.to_vec();
    sorted.sort_unstable();
    let last = sorted.len().checked_sub(1)?;
    let rank = p / 100.0 * last as f64;
    let (low, high) = (rank.floor() as usize, rank.ceil() as usize);
    Some(sorted[low] as f64 + (sorted[high] - sorted[low]) as f64 * (rank - low as f64))
}

/// A configured limit: crossing it (a value strictly above) notifies the department's owners once.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Threshold {
    pub indicator: Indicator,
    /// In the indicator's unit: a count, a percentage or minutes.
    pub above: f64,
    pub period: PeriodKind,
    /// `None`: every department.
    pub department: Option<String>,
}

impl Threshold {
    pub fn applies_to(&self, department: &str, period: PeriodKind) -> bool {
        self.period == period && self.department.as_deref().is_none_or(|d| d == department)
    }

    pub fn crossed_by(&self, value: Option<f64>) -> bool {
        value.is_some_and(|v| v > self.above)
    }
}

/// The limit that applies to one department's indicator: its own if configured, else the one for every department.
pub fn threshold_for<'a>(
    thresholds: &'a [Threshold],
    indicator: Indicator,
    department: &str,
    period: PeriodKind,
) -> Option<&'a Threshold> {
    let applying = || thresholds.iter().filter(move |t| t.indicator == indicator && t.applies_to(department, period));
    applying().find(|t| t.department.is_some()).or_else(|| applying().next())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn day(text: &str) -> NaiveDate {
        text.parse().unwrap()
    }

    #[test]
    fn weeks_start_on_monday_and_months_on_the_first_in_tokyo() {
        // 2026-11-30 is a Monday; Sunday 2026-11-29 belongs to the week before.
        assert_eq!(Period::containing(PeriodKind::Week, day("2026-11-29")).start, day("2026-11-23"));
        assert_eq!(Period::containing(PeriodKind::Week, day("2026-11-30")).start, day("2026-11-30"));
        assert_eq!(Period::containing(PeriodKind::Month, day("2026-11-30")).start, day("2026-11-01"));
        // 2026-11-29 20:00 UTC is already Monday 05:00 in Tokyo.
        let now = Utc.with_ymd_and_hms(2026, 11, 29, 20, 0, 0).unwrap();
        assert_eq!(Period::current(PeriodKind::Week, now, chrono_tz::Asia::Tokyo).start, day("2026-11-30"));
        let (from, to) = Period::containing(PeriodKind::Month, day("2026-12-15")).bounds(chrono_tz::Asia::Tokyo);
        assert_eq!(from, Utc.with_ymd_and_hms(2026, 11, 30, 15, 0, 0).unwrap());
        assert_eq!(to, Utc.with_ymd_and_hms(2026, 12, 31, 15, 0, 0).unwrap());
    }

    #[test]
    fn a_trend_lists_the_periods_before_oldest_first_across_a_year_end() {
        let january = Period::containing(PeriodKind::Month, day("2027-01-10"));
        let starts: Vec<NaiveDate> = january.trend(3).into_iter().map(|p| p.start).collect();
        assert_eq!(starts, vec![day("2026-11-01"), day("2026-12-01"), day("2027-01-01")]);
    }

    #[test]
    fn rates_divide_by_their_own_whole_and_an_empty_whole_has_no_value() {
        let counts = Counts {
            outside_calls: 40,
            outside_errors: 3,
            sends: 200,
            double_sends: 1,
            reruns_ended: 4,
            reruns_failed: 1,
            ..Counts::default()
        };
        assert_eq!(counts.value(Indicator::OutsideApiErrorRate), Some(7.5));
        assert_eq!(counts.value(Indicator::DoubleSendRatio), Some(0.5));
        assert_eq!(counts.value(Indicator::RerunErrorRate), Some(25.0));
        assert_eq!(counts.fraction(Indicator::RerunErrorRate), Some((1, 4)));
        assert_eq!(Counts::default().value(Indicator::RerunErrorRate), None);
        assert_eq!(Counts::default().value(Indicator::ApprovalLatencyMedian), None);
        assert_eq!(Counts::default().value(Indicator::Stalled), Some(0.0));
    }

    #[test]
    fn approval_latency_is_the_interpolated_median_and_90th_percentile_in_minutes() {
        let counts = Counts { approval_seconds: vec![600, 60, 1200, 300, 3000], ..Counts::default() };
        assert_eq!(counts.value(Indicator::ApprovalLatencyMedian), Some(10.0));
        // Ranks 0..4: the 90th percentile lies 60 % of the way from 1,200 s to 3,000 s = 2,280 s = 38 min.
        assert_eq!(counts.value(Indicator::ApprovalLatencyP90), Some(38.0));
        assert_eq!(percentile(&[10, 20], 50.0), Some(15.0));
        assert_eq!(percentile(&[42], 90.0), Some(42.0));
    }

    #[test]
    fn departments_add_up_and_their_latencies_pool() {
        let mut all = Counts { sends: 10, approval_seconds: vec![60], ..Counts::default() };
        all.stalled_by_event.insert("timeout".into(), 2);
        let mut other = Counts { sends: 5, double_sends: 1, approval_seconds: vec![180], ..Counts::default() };
        other.stalled_by_event.insert("timeout".into(), 1);
        other.stalled_by_event.insert("rate_limited".into(), 4);
        all.add(&other);
        assert_eq!(all.sends, 15);
        assert_eq!(all.value(Indicator::Stalled), Some(7.0));
        assert_eq!(all.value(Indicator::ApprovalLatencyMedian), Some(2.0));
    }

    #[test]
    fn a_threshold_is_crossed_strictly_above_and_only_for_its_period_and_department() {
        let limit = Threshold {
            indicator: Indicator::RerunErrorRate,
            above: 10.0,
            period: PeriodKind::Week,
            department: Some("sales".into()),
        };
        assert!(!limit.crossed_by(Some(10.0)));
        assert!(limit.crossed_by(Some(10.5)));
        assert!(!limit.crossed_by(None));
        assert!(limit.applies_to("sales", PeriodKind::Week));
        assert!(!limit.applies_to("billing", PeriodKind::Week));
        assert!(!limit.applies_to("sales", PeriodKind::Month));
        for indicator in Indicator::ALL {
            assert_eq!(Indicator::parse(indicator.key()), Some(indicator));
        }
    }

    #[test]
    fn a_departments_own_threshold_wins_over_the_one_for_every_department() {
        let every =
            Threshold { indicator: Indicator::Stalled, above: 20.0, period: PeriodKind::Week, department: None };
        let sales = Threshold { department: Some("sales".into()), above: 5.0, ..every.clone() };
        let limits = [every, sales];
        assert_eq!(threshold_for(&limits, Indicator::Stalled, "sales", PeriodKind::Week).map(|t| t.above), Some(5.0));
        assert_eq!(
            threshold_for(&limits, Indicator::Stalled, "billing", PeriodKind::Week).map(|t| t.above),
            Some(20.0)
        );
        assert!(threshold_for(&limits, Indicator::Stalled, "sales", PeriodKind::Month).is_none());
        assert!(threshold_for(&limits, Indicator::RerunErrorRate, "sales", PeriodKind::Week).is_none());
    }
}
