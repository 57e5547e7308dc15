//! Moments and days as the server functions send them to the pages: RFC 3339 as chrono writes them
//! (`2026-12-02T06:19:00.123456Z`, `2026-12-02`), read back by a strict reader of that one form. chrono's own
//! reader (every format item, RFC 2822 too) was about 18 KB of code in the browser's first download; the views
//! that download reads use this one. What it does not understand it refuses, as chrono would.
use chrono::{DateTime, NaiveDate, TimeDelta, Utc};
use serde::de::{Deserializer, Error};
use serde::{Deserialize, Serialize, Serializer};

/// `2026-12-02T06:19:00Z`, with up to nine decimals of a second, and `Z` or an offset (`+09:00`).
pub fn parse_moment(text: &str) -> Option<DateTime<Utc>> {
    let (day, rest) = text.split_at_checked(10)?;
    let rest = rest.strip_prefix('T')?;
    let (time, mut rest) = rest.split_at_checked(8)?;
    let (hour, minute, second) = (number(time.get(0..2)?)?, number(time.get(3..5)?)?, number(time.get(6..8)?)?);
    if time.get(2..3) != Some(":") || time.get(5..6) != Some(":") {
        return None;
    }
    let mut nanos = 0;
    if let Some(decimals) = rest.strip_prefix('.') {
        let len = decimals.bytes().take_while(u8::is_ascii_digit).count();
        if !(1..=9).contains(&len) {
            return None;
        }
        nanos = number(&decimals[..len])? * 10u32.pow(9 - len as u32);
        rest = &decimals[len..];
    }
    let offset_minutes = match rest {
        "Z" => 0,
        _ => {
            let (sign, hours_minutes) = (rest.get(..1)?, rest.get(1..)?);
            if hours_minutes.len() != 5 || hours_minutes.get(2..3) != Some(":") {
                return None;
            }
            let minutes = i64::from(number(hours_minutes.get(..2)?)? * 60 + number(hours_minutes.get(3..)?)?);
            match sign {
                "+" => minutes,
                "-" => -minutes,
                _ => return None,
            }
        }
    };
    let local = parse_day(day)?.and_hms_nano_opt(hour, minute, second, nanos)?;
    Some(DateTime::from_naive_utc_and_offset(local - TimeDelta::minutes(offset_minutes), Utc))
}

/// `2026-12-02`.
pub fn parse_day(text: &str) -> Option<NaiveDate> {
    if text.len() != 10 || text.get(4..5) != Some("-") || text.get(7..8) != Some("-") {
        return None;
    }
    NaiveDate::from_ymd_opt(number(text.get(..4)?)? as i32, number(text.get(5..7)?)?, number(text.get(8..)?)?)
}

/// Only ASCII digits (no sign, no blank).
fn number(text: &str) -> Option<u32> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

/// `parse_moment`, or the deserializer's error naming the text.
fn read_moment<E: Error>(text: &str) -> Result<DateTime<Utc>, E> {
    parse_moment(text).ok_or_else(|| E::custom(format!("not an RFC 3339 moment: {text}")))
}

/// `#[serde(with = "wire_time::moment")]`: written by chrono, read by `parse_moment`.
pub mod moment {
    use super::*;

    pub fn serialize<S: Serializer>(at: &DateTime<Utc>, serializer: S) -> Result<S::Ok, S::Error> {
        at.serialize(serializer)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<DateTime<Utc>, D::Error> {
        read_moment(&String::deserialize(deserializer)?)
    }
}

/// `#[serde(with = "wire_time::optional_moment")]`.
pub mod optional_moment {
    use super::*;

    pub fn serialize<S: Serializer>(at: &Option<DateTime<Utc>>, serializer: S) -> Result<S::Ok, S::Error> {
        at.serialize(serializer)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<DateTime<Utc>>, D::Error> {
        <Option<String>>::deserialize(deserializer)?.map(|text| read_moment(&text)).transpose()
    }
}

/// `#[serde(with = "wire_time::day")]`.
pub mod day {
    use super::*;

    pub fn serialize<S: Serializer>(day: &NaiveDate, serializer: S) -> Result<S::Ok, S::Error> {
        day.serialize(serializer)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<NaiveDate, D::Error> {
        let text = String::deserialize(deserializer)?;
        parse_day(&text).ok_or_else(|| D::Error::custom(format!("not a day (YYYY-MM-DD): {text}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn every_moment_chrono_writes_reads_back_the_same(seconds in 0i64..253_402_300_799, nanos in 0u32..1_000_000_000) {
            let at = DateTime::from_timestamp(seconds, nanos).unwrap();
            let written = serde_json::to_string(&at).unwrap();
            prop_assert_eq!(parse_moment(written.trim_matches('"')), Some(at));
            prop_assert_eq!(parse_day(&at.date_naive().to_string()), Some(at.date_naive()));
        }

        #[test]
        fn it_reads_what_chrono_reads_in_this_form(seconds in 0i64..253_402_300_799, micros in 0u32..1_000_000, east in -1439i32..1440) {
            let offset = chrono::FixedOffset::east_opt(east * 60).unwrap();
            let at = DateTime::from_timestamp(seconds, micros * 1000).unwrap().with_timezone(&offset);
            let text = at.to_rfc3339();
            prop_assert_eq!(parse_moment(&text), text.parse::<DateTime<Utc>>().ok());
        }
    }

    #[test]
    fn anything_else_is_refused() {
        for text in [
            "",
            "2026-12-02",
            "2026-12-02 06:19:00Z",
            "2026-12-02T06:19Z",
            "2026-12-02T06:19:00",
            "2026-12-02T06:19:00.Z",
            "2026-12-02T06:19:00.1234567890Z",
            "2026-12-02T06:19:00+0900",
            "2026-12-02T06:19:00*09:00",
            "2026-13-02T06:19:00Z",
            "2026-02-30T06:19:00Z",
            "2026-12-02T24:00:00Z",
            "2026-12-02T06:60:00Z",
            "+2026-12-02T06:19:00Z",
            "2026-12-02T06:19:00Z ",
            "２０２６-12-02T06:19:00Z",
        ] {
            assert_eq!(parse_moment(text), None, "{text:?}");
        }
        for text in ["", "2026-2-02", "2026-12-2", "2026/12/02", "2026-12-32", "-026-12-02", "2026-12-02T"] {
            assert_eq!(parse_day(text), None, "{text:?}");
        }
        let refused: Result<PauseAt, _> = serde_json::from_str(r#"{"at": "Tue, 1 Dec 2026 06:19:00 GMT"}"#);
        assert!(refused.is_err());
    }

    #[derive(Debug, Deserialize)]
    struct PauseAt {
        #[serde(with = "moment")]
        #[allow(dead_code)] // only read back
        at: DateTime<Utc>,
    }

    #[test]
    fn a_field_reads_as_chrono_wrote_it() {
        let text = r#"{"at": "2026-12-02T06:19:00.5Z"}"#;
        let read: PauseAt = serde_json::from_str(text).unwrap();
        assert_eq!(read.at, "2026-12-02T06:19:00.5Z".parse::<DateTime<Utc>>().unwrap());
    }
}
