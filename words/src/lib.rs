//! The product's words in each language, as plain functions of a `Locale`: the pages (through `ui::labels`),
//! the downloads and the exports all say the same thing the same way. A crate above the domain and the contract,
//! with the translations it is made of.

// The `i18n` module: `Locale`, `use_i18n`, `t!` (generated from words/locales by build.rs).
include!(concat!(env!("OUT_DIR"), "/i18n/mod.rs"));

pub mod audit;
pub mod chat;
pub mod checklist;
pub mod columns;
pub mod conformance;
pub mod decision_table;
pub mod evidence;
#[cfg(test)]
mod locale_files;
pub mod notifications;
pub mod plan;

use crate::i18n::{Locale, td_string};
use domain::batches::BatchStatus;
use domain::indicators::Indicator;
use domain::reconciliation::Verdict;
use domain::rerun_request::RerunRequestStatus;
use domain::stall::FailureClass;

/// Where the n-th thing a person wrote goes in a sentence of a page: `td_string!(l, key, by = slot(0))`; the page
/// marks each piece as theirs (`ui::labels::with_entered`).
pub fn slot(n: usize) -> String {
    format!("{SLOT_START}{n}{SLOT_END}")
}

pub const SLOT_START: char = '\u{E000}';
pub const SLOT_END: char = '\u{E001}';

/// The reader's language from the request's `Cookie` headers: the pages' language cookie, as the pages' own i18n
/// provider reads it, else Japanese.
pub fn locale_of_cookies<'a>(cookie_headers: impl IntoIterator<Item = &'a str>) -> Locale {
    use domain::preferences::{LANGUAGE_COOKIE, cookie_value};
    let mut values = cookie_headers.into_iter().filter_map(|c| cookie_value(c, LANGUAGE_COOKIE));
    values.find_map(|value| value.parse().ok()).unwrap_or_default()
}

/// The language of a command's report: `ja…` Japanese, `en…` English, and the C locale (`C`, `C.UTF-8`,
/// `POSIX`: a machine with no language set, as CI and containers are) English; unset, Japanese.
pub fn locale_of_language(lang: Option<&str>) -> Locale {
    match lang.map(|l| l.split(['.', '_', '-']).next().unwrap_or_default()) {
        Some("C" | "POSIX" | "en") => Locale::en,
        Some(code) => code.parse().unwrap_or_default(),
        None => Locale::default(),
    }
}

#[cfg(test)]
#[test]
fn a_commands_language_follows_lang_and_the_c_locale_is_english() {
    for (lang, locale) in [
        (Some("ja_JP.UTF-8"), Locale::ja),
        (Some("en_US.UTF-8"), Locale::en),
        (Some("C.UTF-8"), Locale::en),
        (Some("C"), Locale::en),
        (Some("POSIX"), Locale::en),
        (Some("en"), Locale::en),
        (None, Locale::ja),
    ] {
        assert_eq!(locale_of_language(lang), locale, "{lang:?}");
    }
}

/// A stall event's name (an unknown code: not classified).
pub fn event_label_in(l: Locale, event: &str) -> &'static str {
    match event {
        "auth_expired" => td_string!(l, common.event.auth_expired),
        "rate_limited" => td_string!(l, common.event.rate_limited),
        "temporary_failure" => td_string!(l, common.event.temporary_failure),
        "no_response" => td_string!(l, common.event.no_response),
        "duplicate_notification" => td_string!(l, common.event.duplicate_notification),
        "stale_notification" => td_string!(l, common.event.stale_notification),
        "partial_success" => td_string!(l, common.event.partial_success),
        "ai_in_progress" => td_string!(l, common.event.ai_in_progress),
        "cancel_requested" => td_string!(l, common.event.cancel_requested),
        "result_unknown" => td_string!(l, common.event.result_unknown),
        _ => td_string!(l, common.event.unclassified),
    }
}

/// An indicator's name on the review page, its charts and the threshold notifications.
pub fn indicator_label_in(l: Locale, indicator: Indicator) -> &'static str {
    match indicator {
        Indicator::MissingProcessId => td_string!(l, review.indicator.missing_process_id),
        Indicator::IdempotencyCollisions => td_string!(l, review.indicator.idempotency_collisions),
        Indicator::OutsideApiErrorRate => td_string!(l, review.indicator.outside_api_error_rate),
        Indicator::DoubleSendFlags => td_string!(l, review.indicator.double_send_flags),
        Indicator::DoubleSendRatio => td_string!(l, review.indicator.double_send_ratio),
        Indicator::RerunErrorRate => td_string!(l, review.indicator.rerun_error_rate),
        Indicator::ApprovalLatencyMedian => td_string!(l, review.indicator.approval_latency_median),
        Indicator::ApprovalLatencyP90 => td_string!(l, review.indicator.approval_latency_p90),
        Indicator::Stalled => td_string!(l, review.indicator.stalled),
    }
}

/// A failure class of an outside system.
pub fn failure_class_label_in(l: Locale, class: FailureClass) -> &'static str {
    match class {
        FailureClass::SystemError => td_string!(l, common.failure_class.system_error),
        FailureClass::OutsideServiceOutage => td_string!(l, common.failure_class.outside_service_outage),
        FailureClass::DataInconsistency => td_string!(l, common.failure_class.data_inconsistency),
    }
}

/// An AI generation's background status.
pub fn ai_status_label_in(l: Locale, status: domain::ai::AiStatus) -> &'static str {
    use domain::ai::AiStatus;
    match status {
        AiStatus::Queued => td_string!(l, operation.ai.state.queued),
        AiStatus::InProgress => td_string!(l, operation.ai.state.in_progress),
        AiStatus::Completed => td_string!(l, operation.ai.state.completed),
        AiStatus::Failed => td_string!(l, operation.ai.state.failed),
        AiStatus::Cancelled => td_string!(l, operation.ai.state.cancelled),
        AiStatus::Incomplete => td_string!(l, operation.ai.state.incomplete),
    }
}

/// A moment in a time zone, with the zone's offset so that nobody has to guess.
pub fn local_time_in(zone: chrono_tz::Tz, at: chrono::DateTime<chrono::Utc>) -> String {
    use chrono::{Datelike, Timelike};
    // `format("%Y-%m-%d %H:%M %Z")`, written out: no strftime parser per cell, nor in the browser's bundle.
    let t = at.with_timezone(&zone);
    format!("{:04}-{:02}-{:02} {:02}:{:02} {}", t.year(), t.month(), t.day(), t.hour(), t.minute(), t.offset())
}

/// A threshold or a value as people write it: at most two decimals, none when whole.
pub fn round(value: f64) -> String {
    let text = format!("{value:.2}");
    text.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// Reconciliation verdicts, with a sign so that colour is never the only cue.
pub fn verdict_label_in(l: Locale, verdict: Option<Verdict>) -> &'static str {
    match verdict {
        Some(Verdict::Executed) => td_string!(l, common.verdict.executed),
        Some(Verdict::ExecutedMismatch) => td_string!(l, common.verdict.executed_mismatch),
        Some(Verdict::ExecutedNotCompared) => td_string!(l, common.verdict.executed_not_compared),
        Some(Verdict::NotExecuted) => td_string!(l, common.verdict.not_executed),
        Some(Verdict::InProgress) => td_string!(l, common.verdict.in_progress),
        Some(Verdict::Unknown) => td_string!(l, common.verdict.unknown),
        Some(Verdict::LookupFailed) => td_string!(l, common.verdict.lookup_failed),
        None => td_string!(l, common.verdict.none),
    }
}

/// A rerun request's status, with an icon, so that colour is never the only sign.
pub fn rerun_status_in(l: Locale, status: RerunRequestStatus) -> &'static str {
    use RerunRequestStatus as S;
    match status {
        S::Draft => td_string!(l, rerun.status.draft),
        S::PendingApproval => td_string!(l, rerun.status.pending_approval),
        S::Approved => td_string!(l, rerun.status.approved),
        S::Rejected => td_string!(l, rerun.status.rejected),
        S::Expired => td_string!(l, rerun.status.expired),
        S::Cancelled => td_string!(l, rerun.status.cancelled),
        S::Dispatched => td_string!(l, rerun.status.dispatched),
        S::Succeeded => td_string!(l, rerun.status.succeeded),
        S::Failed => td_string!(l, rerun.status.failed),
    }
}

/// A bulk rerun's status.
pub fn batch_status_in(l: Locale, status: BatchStatus) -> &'static str {
    match status {
        BatchStatus::Previewing => td_string!(l, rerun.batch.status.previewing),
        BatchStatus::Preview => td_string!(l, rerun.batch.status.preview),
        BatchStatus::Draft => td_string!(l, rerun.batch.status.draft),
        BatchStatus::PendingApproval => td_string!(l, rerun.batch.status.pending_approval),
        BatchStatus::Dispatching => td_string!(l, rerun.batch.status.dispatching),
        BatchStatus::Paused => td_string!(l, rerun.batch.status.paused),
        BatchStatus::Sent => td_string!(l, rerun.batch.status.sent),
        BatchStatus::Completed => td_string!(l, rerun.batch.status.completed),
        BatchStatus::Cancelled => td_string!(l, rerun.batch.status.cancelled),
        BatchStatus::Rejected => td_string!(l, rerun.batch.status.rejected),
        BatchStatus::Expired => td_string!(l, rerun.batch.status.expired),
    }
}
