//! Each user's language and time zone for the pages.
use super::invalid::{Invalid, Rule};
use chrono_tz::Tz;

/// The languages the pages speak; the first is the default.
pub const LANGUAGES: [&str; 2] = ["ja", "en"];

/// The browser cookie holding the pages' language.
pub const LANGUAGE_COOKIE: &str = "lang";
/// The browser cookie holding the pages' time zone.
pub const TIME_ZONE_COOKIE: &str = "tz";

pub const DEFAULT_TIME_ZONE: Tz = chrono_tz::Asia::Tokyo;

/// The zones a user can choose. chrono-tz is built with only these (see .cargo/config.toml), which keeps the
/// browser bundle small; a request for another zone is refused.
pub const OFFERED_TIME_ZONES: [&str; 14] = [
    "Asia/Tokyo",
    "Asia/Seoul",
    "Asia/Shanghai",
    "Asia/Taipei",
    "Asia/Singapore",
    "Asia/Bangkok",
    "Asia/Kolkata",
    "Australia/Sydney",
    "Europe/London",
    "Europe/Berlin",
    "America/New_York",
    "America/Chicago",
    "America/Los_Angeles",
    "UTC",
];

pub fn language(code: &str) -> Result<&'static str, Invalid> {
    let unknown = || Invalid::new(Rule::Unknown, format!("unknown language '{code}' (ja or en)"));
    LANGUAGES.into_iter().find(|l| *l == code.trim()).ok_or_else(unknown)
}

pub fn time_zone(name: &str) -> Result<Tz, Invalid> {
    let unknown = |_| {
        Invalid::new(
            Rule::Unknown,
            format!("unknown time zone '{name}' (one of the offered IANA names such as Asia/Tokyo)"),
        )
    };
    name.trim().parse::<Tz>().map_err(unknown)
}

/// One cookie's value in a `Cookie` header (or in the browser's `document.cookie`).
pub fn cookie_value<'a>(cookies: &'a str, name: &str) -> Option<&'a str> {
    cookies.split(';').filter_map(|c| c.trim().split_once('=')).find(|(k, _)| *k == name).map(|(_, v)| v)
}

/// A stored zone name that no longer parses (a renamed zone) falls back to Tokyo rather than failing a page.
pub fn time_zone_or_default(name: &str) -> Tz {
    time_zone(name).unwrap_or(DEFAULT_TIME_ZONE)
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{TimeZone, Utc};

    #[test]
    fn a_cookie_is_found_by_its_exact_name() {
        let header = "rerun_gate_session=abc; lang=en; tz=Europe/London";
        assert_eq!(cookie_value(header, "tz"), Some("Europe/London"));
        assert_eq!(cookie_value(header, "lang"), Some("en"));
        assert_eq!(cookie_value("xlang=ja", "lang"), None);
    }

    #[test]
    fn only_japanese_and_english_are_languages() {
        assert_eq!(language("en"), Ok("en"));
        assert!(language("fr").unwrap_err().message.contains("fr"));
    }

    #[test]
    fn every_offered_zone_is_a_real_zone_and_bad_names_are_refused() {
        for zone in OFFERED_TIME_ZONES {
            assert!(time_zone(zone).is_ok(), "{zone}");
        }
        assert!(time_zone("Tokyo/Asia").is_err());
        assert_eq!(time_zone("Europe/Paris").unwrap_err().rule, Rule::Unknown, "not offered, not known");
        assert_eq!(time_zone_or_default("Mars/Olympus"), DEFAULT_TIME_ZONE);
    }

    #[test]
    fn the_same_moment_reads_in_the_readers_zone() {
        let at = Utc.with_ymd_and_hms(2026, 7, 1, 0, 30, 0).unwrap();
        let tokyo = at.with_timezone(&DEFAULT_TIME_ZONE).format("%H:%M %Z").to_string();
        let london = at.with_timezone(&time_zone("Europe/London").unwrap()).format("%H:%M %Z").to_string();
        assert_eq!(tokyo, "09:30 JST");
        assert_eq!(london, "01:30 BST");
    }
}
