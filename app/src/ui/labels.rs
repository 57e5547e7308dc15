//! Words and formats shared by the pages, in the reader's language (`common` namespace) and time zone.
use crate::domain::operations::{OperationStatus, StepState};
use crate::domain::preferences::{DEFAULT_TIME_ZONE, TIME_ZONE_COOKIE, cookie_value, time_zone_or_default};
use crate::domain::reconciliation::Verdict;
use crate::i18n::{Locale, td_string, use_i18n};
pub use crate::words::{event_label_in, failure_class_label_in, indicator_label_in};
use chrono::{DateTime, Datelike, Timelike, Utc};
use chrono_tz::Tz;

/// The language the page is rendered in (the page reloads when someone switches).
pub fn locale() -> Locale {
    use_i18n().get_locale_untracked()
}

/// The reader's time zone, provided by the app from the `tz` cookie (set with the language cookie at sign-in and
/// on the account page), so that the server's render and the browser's agree without waiting for anything.
#[derive(Clone, Copy, Debug)]
pub struct ReaderZone(pub Tz);

impl ReaderZone {
    pub fn from_cookie() -> ReaderZone {
        ReaderZone(time_zone_or_default(&cookie(TIME_ZONE_COOKIE).unwrap_or_default()))
    }
}

pub fn reader_zone() -> Tz {
    leptos::prelude::use_context::<ReaderZone>().map_or(DEFAULT_TIME_ZONE, |z| z.0)
}

pub use crate::words::slot;
use crate::words::{SLOT_END, SLOT_START};

/// A sentence of the page (built with `slot`s) holding what people wrote, each piece marked as theirs: it is in
/// the language they wrote it in. One plain function rather than a view per sentence keeps the first download
/// small (a `td!` with views is compiled once per call and language).
pub fn with_entered(sentence: &str, entered: &[&str]) -> leptos::prelude::AnyView {
    use leptos::prelude::*;
    let mut parts = sentence.split(SLOT_START);
    let mut views = vec![parts.next().unwrap_or_default().to_string().into_any()];
    for part in parts {
        let (n, rest) = part.split_once(SLOT_END).unwrap_or(("", part));
        let text = n.parse::<usize>().ok().and_then(|n| entered.get(n)).unwrap_or(&"").to_string();
        views.push(view! { <span data-entered>{text}</span> }.into_any());
        views.push(rest.to_string().into_any());
    }
    views.into_any()
}

/// A moment in the reader's time zone, with the zone's abbreviation so that nobody has to guess.
pub fn local_time(at: DateTime<Utc>) -> String {
    local_time_in(reader_zone(), at)
}

/// The same in a zone looked up once (a context lookup walks the owners up to the app: once per table, not per
/// cell).
pub use crate::words::local_time_in;

/// The value of a `datetime-local` field for a moment, in the reader's zone, without seconds.
pub fn local_input_value(zone: Tz, at: DateTime<Utc>) -> String {
    // `format("%Y-%m-%dT%H:%M")`, written out for the same reason.
    let t = at.with_timezone(&zone);
    format!("{:04}-{:02}-{:02}T{:02}:{:02}", t.year(), t.month(), t.day(), t.hour(), t.minute())
}

/// A cookie of this request (server) or of this page (browser).
fn cookie(name: &str) -> Option<String> {
    #[cfg(feature = "ssr")]
    let all = leptos::prelude::use_context::<axum::http::request::Parts>()?
        .headers
        .get(axum::http::header::COOKIE)?
        .to_str()
        .ok()?
        .to_string();
    #[cfg(all(feature = "hydrate", not(feature = "ssr")))]
    let all = {
        use wasm_bindgen::JsCast;
        leptos::prelude::document().dyn_into::<web_sys::HtmlDocument>().ok()?.cookie().ok()?
    };
    #[cfg(not(any(feature = "ssr", feature = "hydrate")))]
    let all = String::new();
    cookie_value(&all, name).map(str::to_string)
}

pub fn event_label(event: &str) -> &'static str {
    event_label_in(locale(), event)
}

pub fn failure_class_label(class: crate::domain::stall::FailureClass) -> &'static str {
    failure_class_label_in(locale(), class)
}

/// Step states with an icon, so that colour is never the only sign.
pub fn step_state_label(state: StepState) -> &'static str {
    let l = locale();
    match state {
        StepState::NotStarted => td_string!(l, common.state.not_started),
        StepState::Started => td_string!(l, common.state.running),
        StepState::Succeeded => td_string!(l, common.state.succeeded),
        StepState::Failed => td_string!(l, common.state.failed),
        StepState::Unknown => td_string!(l, common.state.unknown),
    }
}

/// Operation states with an icon, so that colour is never the only sign.
pub fn operation_status_label(status: OperationStatus) -> &'static str {
    let l = locale();
    match status {
        OperationStatus::Running => td_string!(l, common.state.running),
        OperationStatus::Stalled => td_string!(l, common.state.stalled),
        OperationStatus::OnHold => td_string!(l, common.state.on_hold),
        OperationStatus::RerunPending => td_string!(l, common.state.rerun_pending),
        OperationStatus::Rerunning => td_string!(l, common.state.rerunning),
        OperationStatus::Completed => td_string!(l, common.state.completed),
        OperationStatus::Resolved => td_string!(l, common.state.resolved),
    }
}

/// Reconciliation verdicts, with a sign so that colour is never the only cue.
pub fn verdict_label(verdict: Option<Verdict>) -> &'static str {
    crate::words::verdict_label_in(locale(), verdict)
}

/// Rerun-request statuses with an icon, so that colour is never the only sign.
pub fn status_label(status: crate::domain::rerun_request::RerunRequestStatus) -> &'static str {
    crate::words::rerun_status_in(locale(), status)
}

/// Batch statuses with an icon, so that colour is never the only sign.
pub fn batch_status_label(status: crate::domain::batches::BatchStatus) -> &'static str {
    crate::words::batch_status_in(locale(), status)
}

/// An incident's action statuses with a sign, so that colour is never the only cue.
pub fn action_status_label(status: crate::domain::incidents::ActionStatus) -> &'static str {
    use crate::domain::incidents::ActionStatus;
    let l = locale();
    match status {
        ActionStatus::Open => td_string!(l, incident.status.open),
        ActionStatus::Done => td_string!(l, incident.status.done),
        ActionStatus::Dropped => td_string!(l, incident.status.dropped),
    }
}

#[cfg(test)]
mod tests {
    use super::{local_input_value, local_time_in};
    use crate::domain::preferences::{OFFERED_TIME_ZONES, time_zone};
    use chrono::{TimeZone, Utc};

    #[test]
    fn a_moment_reads_as_strftime_would_write_it_in_every_offered_zone_and_field() {
        let moments =
            [Utc.with_ymd_and_hms(2026, 12, 2, 8, 5, 0).unwrap(), Utc.with_ymd_and_hms(2026, 7, 1, 23, 59, 0).unwrap()];
        for name in OFFERED_TIME_ZONES {
            let zone = time_zone(name).unwrap();
            for at in moments {
                let strftime = at.with_timezone(&zone).format("%Y-%m-%d %H:%M %Z").to_string();
                assert_eq!(local_time_in(zone, at), strftime, "{name}");
                let field = at.with_timezone(&zone).format("%Y-%m-%dT%H:%M").to_string();
                assert_eq!(local_input_value(zone, at), field, "{name}");
            }
        }
        assert_eq!(local_time_in(time_zone("Asia/Tokyo").unwrap(), moments[0]), "2026-12-02 17:05 JST");
    }

    #[test]
    fn what_people_wrote_is_marked_as_theirs_in_the_sentence_that_holds_it() {
        use leptos::prelude::RenderHtml;
        let sentence = format!("停止：{}、（理由：{}）", super::slot(0), super::slot(1));
        let html = super::with_entered(&sentence, &["Sato", "<b>maintenance</b>"]).to_html().replace("<!>", "");
        assert!(html.contains("停止：<span data-entered>Sato</span>、（理由：<span data-entered>&lt;b&gt;maintenance&lt;/b&gt;</span>）"), "{html}");
        assert!(!html.contains('\u{E000}') && !html.contains('\u{E001}'), "{html}");
    }
}
