//! Incident reports: what happened to which operations, what was done about it, and the prevention actions
//! that follow. An action is overdue when it is still open after its due date; "today" is the date in Japan
//! time (the app's default zone), so that everyone sees the same list whatever their own zone.
use super::invalid::{Invalid, Rule};
use super::operations::OperationStatus;
use super::preferences::DEFAULT_TIME_ZONE;
use chrono::{DateTime, NaiveDate, NaiveDateTime, TimeZone, Utc};
use chrono_tz::Tz;
use serde::{Deserialize, Serialize};

pub const MAX_TITLE_CHARS: usize = 200;
/// Impact, cause, response, an action's description, a pattern's evidence: the limit of the other texts.
pub const MAX_TEXT_CHARS: usize = 2_000;
/// Reports on one page of the list.
pub const PAGE_LENGTH: usize = 50;
/// Process IDs on one report.
pub const MAX_OPERATIONS: usize = 50;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ActionStatus {
    Open,
    Done,
    Dropped,
}

impl ActionStatus {
    pub const ALL: [ActionStatus; 3] = [ActionStatus::Open, ActionStatus::Done, ActionStatus::Dropped];

    pub fn as_str(self) -> &'static str {
        match self {
            ActionStatus::Open => "open",
            ActionStatus::Done => "done",
            ActionStatus::Dropped => "dropped",
        }
    }

    pub fn parse(text: &str) -> Option<ActionStatus> {
        Self::ALL.into_iter().find(|s| s.as_str() == text)
    }
}

/// The date the app calls today: the clock's date in Japan time.
pub fn today(now: DateTime<Utc>) -> NaiveDate {
    now.with_timezone(&DEFAULT_TIME_ZONE).date_naive()
}

/// Still open on the day after its due date. Done or dropped actions are never overdue.
pub fn is_overdue(status: ActionStatus, due_on: NaiveDate, today: NaiveDate) -> bool {
    status == ActionStatus::Open && due_on < today
}

/// Done, dropped, or reopened: any other status than the current one.
pub fn may_move(from: ActionStatus, to: ActionStatus) -> bool {
    from != to
}

/// Past incidents are worth showing while people decide what to do: stalled or on hold.
pub fn shows_known_patterns(status: OperationStatus) -> bool {
    matches!(status, OperationStatus::Stalled | OperationStatus::OnHold)
}

fn bounded(text: &str, most: usize) -> Result<String, Invalid> {
    let text = text.trim();
    if text.is_empty() {
        return Err(Invalid::new(Rule::Required, "required"));
    }
    if text.chars().count() > most {
        return Err(Invalid::new(Rule::TooLong, format!("at most {most} characters")));
    }
    Ok(text.to_string())
}

pub fn title(text: &str) -> Result<String, Invalid> {
    bounded(text, MAX_TITLE_CHARS)
}

/// Impact, cause, response, an action's description, a pattern's evidence: trimmed, required, bounded.
pub fn text(text: &str) -> Result<String, Invalid> {
    bounded(text, MAX_TEXT_CHARS)
}

/// Process IDs separated by commas (also 、) or line breaks, in the order given, each once.
pub fn process_ids(text: &str) -> Result<Vec<String>, Invalid> {
    let mut ids: Vec<String> = Vec::new();
    for id in text.split(|c: char| c == ',' || c == '、' || c.is_whitespace()).filter(|id| !id.is_empty()) {
        if !ids.iter().any(|known| known == id) {
            ids.push(id.to_string());
        }
    }
    if ids.is_empty() {
        return Err(Invalid::new(Rule::Required, "at least one process ID is required"));
    }
    if ids.len() > MAX_OPERATIONS {
        return Err(Invalid::new(Rule::TooLong, format!("at most {MAX_OPERATIONS} process IDs")));
    }
    Ok(ids)
}

/// When it happened: `2026-11-30T09:15` (a browser's date-time field) or `2026-11-30 09:15[:00]` in the
/// reader's zone, or RFC 3339 with an offset; not in the future.
pub fn occurred_at(text: &str, zone: Tz, now: DateTime<Utc>) -> Result<DateTime<Utc>, Invalid> {
    let text = text.trim();
    if text.is_empty() {
        return Err(Invalid::new(Rule::Required, "required"));
    }
    let bad = || Invalid::new(Rule::Unknown, format!("'{text}' is not a date and time such as 2026-11-30T09:15"));
    let at = match DateTime::parse_from_rfc3339(text) {
        Ok(at) => at.with_timezone(&Utc),
        Err(_) => {
            let local = ["%Y-%m-%dT%H:%M", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M", "%Y-%m-%d %H:%M:%S"]
                .iter()
                .find_map(|format| NaiveDateTime::parse_from_str(text, format).ok())
                .ok_or_else(bad)?;
            // A time skipped by a daylight-saving change does not exist; a repeated one means the first.
            zone.from_local_datetime(&local).earliest().ok_or_else(bad)?.with_timezone(&Utc)
        }
    };
    // A few minutes of leeway for a clock that runs ahead.
    if at > now + chrono::Duration::minutes(5) {
        return Err(Invalid::new(Rule::Unknown, "the time it happened cannot be in the future"));
    }
    Ok(at)
}

/// A due date: `2026-12-15`.
pub fn due_on(text: &str) -> Result<NaiveDate, Invalid> {
    let text = text.trim();
    if text.is_empty() {
        return Err(Invalid::new(Rule::Required, "required"));
    }
    NaiveDate::parse_from_str(text, "%Y-%m-%d")
        .map_err(|_| Invalid::new(Rule::Unknown, format!("'{text}' is not a date such as 2026-12-15")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn date(text: &str) -> NaiveDate {
        NaiveDate::parse_from_str(text, "%Y-%m-%d").unwrap()
    }

    #[test]
    fn an_open_action_is_overdue_only_after_its_due_date() {
        let due = date("2026-12-01");
        assert!(!is_overdue(ActionStatus::Open, due, date("2026-11-30")));
        assert!(!is_overdue(ActionStatus::Open, due, date("2026-12-01")), "due today is not late yet");
        assert!(is_overdue(ActionStatus::Open, due, date("2026-12-02")));
    }

    #[test]
    fn a_done_or_dropped_action_is_never_overdue() {
        let (due, later) = (date("2026-12-01"), date("2027-01-01"));
        assert!(!is_overdue(ActionStatus::Done, due, later));
        assert!(!is_overdue(ActionStatus::Dropped, due, later));
    }

    #[test]
    fn today_is_the_date_in_japan() {
        // 15:30 UTC on 30 November is already 1 December in Tokyo.
        let now = Utc.with_ymd_and_hms(2026, 11, 30, 15, 30, 0).unwrap();
        assert_eq!(today(now), date("2026-12-01"));
        let morning = Utc.with_ymd_and_hms(2026, 11, 30, 14, 59, 0).unwrap();
        assert_eq!(today(morning), date("2026-11-30"));
    }

    #[test]
    fn an_action_moves_to_any_other_status() {
        assert!(may_move(ActionStatus::Open, ActionStatus::Done));
        assert!(may_move(ActionStatus::Done, ActionStatus::Open), "reopened");
        assert!(may_move(ActionStatus::Open, ActionStatus::Dropped));
        assert!(!may_move(ActionStatus::Done, ActionStatus::Done));
        assert_eq!(ActionStatus::parse("dropped"), Some(ActionStatus::Dropped));
        assert_eq!(ActionStatus::parse("closed"), None);
    }

    #[test]
    fn known_patterns_show_while_people_decide() {
        assert!(shows_known_patterns(OperationStatus::Stalled));
        assert!(shows_known_patterns(OperationStatus::OnHold));
        assert!(!shows_known_patterns(OperationStatus::Running));
        assert!(!shows_known_patterns(OperationStatus::Completed));
    }

    #[test]
    fn texts_are_trimmed_required_and_bounded() {
        assert_eq!(title("  注文が二重に登録された  ").unwrap(), "注文が二重に登録された");
        assert_eq!(title(" ").unwrap_err().rule, Rule::Required);
        assert_eq!(title(&"あ".repeat(MAX_TITLE_CHARS + 1)).unwrap_err().rule, Rule::TooLong);
        assert!(text(&"あ".repeat(MAX_TEXT_CHARS)).is_ok());
        assert_eq!(text(&"あ".repeat(MAX_TEXT_CHARS + 1)).unwrap_err().rule, Rule::TooLong);
    }

    #[test]
    fn process_ids_are_split_by_commas_or_lines_and_kept_once() {
        assert_eq!(process_ids("ORD-1, ORD-2\nORD-3、ORD-1").unwrap(), ["ORD-1", "ORD-2", "ORD-3"]);
        assert_eq!(process_ids(" ,\n ").unwrap_err().rule, Rule::Required);
        let many: Vec<String> = (0..=MAX_OPERATIONS).map(|n| format!("ORD-{n}")).collect();
        assert_eq!(process_ids(&many.join(",")).unwrap_err().rule, Rule::TooLong);
    }

    #[test]
    fn the_time_it_happened_is_read_in_the_readers_zone() {
        let now = Utc.with_ymd_and_hms(2026, 11, 30, 3, 0, 0).unwrap();
        let tokyo = chrono_tz::Asia::Tokyo;
        let expected = Utc.with_ymd_and_hms(2026, 11, 30, 0, 15, 0).unwrap();
        assert_eq!(occurred_at("2026-11-30T09:15", tokyo, now).unwrap(), expected);
        assert_eq!(occurred_at("2026-11-30 09:15:00", tokyo, now).unwrap(), expected);
        assert_eq!(occurred_at("2026-11-30T00:15:00Z", chrono_tz::UTC, now).unwrap(), expected);
        assert_eq!(occurred_at("2026-11-30T00:15", chrono_tz::UTC, now).unwrap(), expected);
    }

    #[test]
    fn a_bad_or_future_time_is_refused() {
        let now = Utc.with_ymd_and_hms(2026, 11, 30, 3, 0, 0).unwrap();
        let tokyo = chrono_tz::Asia::Tokyo;
        assert_eq!(occurred_at("", tokyo, now).unwrap_err().rule, Rule::Required);
        assert_eq!(occurred_at("yesterday", tokyo, now).unwrap_err().rule, Rule::Unknown);
        assert_eq!(occurred_at("2026-13-01T09:00", tokyo, now).unwrap_err().rule, Rule::Unknown);
        assert!(occurred_at("2026-12-01T09:00", tokyo, now).is_err(), "tomorrow has not happened yet");
    }

    #[test]
    fn a_due_date_is_a_calendar_date() {
        assert_eq!(due_on(" 2026-12-15 ").unwrap(), date("2026-12-15"));
        assert_eq!(due_on("").unwrap_err().rule, Rule::Required);
        assert_eq!(due_on("2026-02-30").unwrap_err().rule, Rule::Unknown);
        assert_eq!(due_on("15/12/2026").unwrap_err().rule, Rule::Unknown);
    }
}
