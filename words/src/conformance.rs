//! The conformance check's findings in the reader's language: what each test call expects, and what came back.
use crate::i18n::{Locale, td_string};
use contract::admin::ReceiverCheck;
use domain::conformance::{Heard, Probe, ProbeResult};

/// What a safe receiver does with the test call.
fn expectation_in(l: Locale, probe: Probe) -> String {
    match probe {
        Probe::Unsigned => td_string!(l, admin.conformance.expect.unsigned),
        Probe::WronglySigned => td_string!(l, admin.conformance.expect.wrongly_signed),
        Probe::Stale => td_string!(l, admin.conformance.expect.stale),
        Probe::Delivered => td_string!(l, admin.conformance.expect.delivered),
        Probe::Repeated => td_string!(l, admin.conformance.expect.repeated),
    }
    .to_string()
}

/// What the receiver did.
fn heard_in(l: Locale, heard: &Heard) -> String {
    match heard {
        Heard::Answer { status, outcome: Some(outcome) } => {
            td_string!(l, admin.conformance.heard.answer_saying, status = *status, outcome = outcome.as_str())
                .to_string()
        }
        Heard::Answer { status, outcome: None } => {
            td_string!(l, admin.conformance.heard.answer, status = *status).to_string()
        }
        Heard::NotSent { why } => td_string!(l, admin.conformance.heard.not_sent, why = why.clone()).to_string(),
        Heard::NoAnswer { why } => td_string!(l, admin.conformance.heard.no_answer, why = why.clone()).to_string(),
    }
}

/// One line: met or not, the expectation, what came back.
pub fn line_in(l: Locale, result: &ProbeResult) -> String {
    let mark = if result.met { td_string!(l, admin.conformance.met) } else { td_string!(l, admin.conformance.not_met) };
    format!("{mark} {} — {}", expectation_in(l, result.probe), heard_in(l, &result.heard))
}

/// The check's verdict: every expectation met, or not.
pub fn verdict_in(l: Locale, check: &ReceiverCheck) -> &'static str {
    if check.all_met() {
        td_string!(l, admin.conformance.all_met)
    } else {
        td_string!(l, admin.conformance.some_not_met)
    }
}

/// The whole check as lines of text (the command line's report): where, each finding, and the verdict.
pub fn report_in(l: Locale, check: &ReceiverCheck) -> String {
    let mut lines = vec![format!("{} {}", td_string!(l, admin.conformance.url), check.url)];
    lines.extend(check.results.iter().map(|r| line_in(l, r)));
    lines.push(verdict_in(l, check).to_string());
    lines.join("\n") + "\n"
}

#[cfg(test)]
mod tests {
    use super::*;
    use domain::conformance::{RerunOutcome, judge};

    #[test]
    fn a_finding_reads_in_japanese_and_in_english() {
        let accepted = judge(Probe::Unsigned, Heard::Answer { status: 200, outcome: Some(RerunOutcome::Test) });
        assert_eq!(
            line_in(Locale::ja, &accepted),
            "✗ 署名のない呼び出しを 401 または 403 で拒否する — HTTP 200（outcome: test）"
        );
        assert_eq!(
            line_in(Locale::en, &accepted),
            "✗ refuses an unsigned call with 401 or 403 — HTTP 200 (outcome: test)"
        );
        let repeat = judge(Probe::Repeated, Heard::Answer { status: 200, outcome: Some(RerunOutcome::Duplicate) });
        assert!(line_in(Locale::en, &repeat).starts_with("✓ "));
    }
}
