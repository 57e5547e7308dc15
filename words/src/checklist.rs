//! The five checks and what the system found for each, in the reader's language.
use super::evidence::basis_label_in;
use crate::i18n::{Locale, td_string};
use domain::checklist::{Check, Found};

pub fn check_label_in(l: Locale, check: Check) -> &'static str {
    match check {
        Check::ProcessIdRecorded => td_string!(l, rerun.check.process_id_recorded),
        Check::OutsideSaysNotDone => td_string!(l, rerun.check.outside_says_not_done),
        Check::KeyUnused => td_string!(l, rerun.check.key_unused),
        Check::FlagNotSet => td_string!(l, rerun.check.flag_not_set),
        Check::CauseAnalysed => td_string!(l, rerun.check.cause_analysed),
    }
}

pub fn found_label_in(l: Locale, found: &Found) -> String {
    let list = |items: Vec<String>| match items.is_empty() {
        true => td_string!(l, rerun.found.none).to_string(),
        false => items.join(td_string!(l, rerun.found.list)),
    };
    match found {
        Found::ProcessId { process_id } => td_string!(l, rerun.found.process_id, process_id = process_id).to_string(),
        Found::OutsideSystems { steps } => list(
            steps
                .iter()
                .map(|(step, asked)| match asked {
                    Some((connector, basis)) => {
                        let basis = basis.as_ref().map_or_else(|| "—".to_string(), |b| basis_label_in(l, b));
                        td_string!(l, rerun.found.asked, step = step, connector = connector, basis = basis).to_string()
                    }
                    None => td_string!(l, rerun.found.not_asked, step = step).to_string(),
                })
                .collect(),
        ),
        Found::Keys { steps } => list(steps.iter().map(|(step, key)| format!("{step}: {key}")).collect()),
        Found::Flags { steps } => list(
            steps
                .iter()
                .map(|(step, done)| match done {
                    true => td_string!(l, rerun.found.done, step = step).to_string(),
                    false => td_string!(l, rerun.found.not_done, step = step).to_string(),
                })
                .collect(),
        ),
        // The message itself is the outside system's (`Found::quote`).
        Found::Cause { error: Some(e), .. } => {
            td_string!(l, rerun.found.error, step = &e.step, class = &e.class).to_string()
        }
        Found::Cause { error: None, event: Some(event) } => {
            td_string!(l, rerun.found.event, event = super::event_label_in(l, event)).to_string()
        }
        Found::Cause { error: None, event: None } => td_string!(l, rerun.found.none).to_string(),
        Found::Text(text) => text.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use domain::reconciliation::Basis;

    #[test]
    fn what_the_system_found_reads_in_each_language() {
        let asked = Found::OutsideSystems {
            steps: vec![
                ("ai_summary".into(), Some(("ai-summary".into(), Some(Basis::NoRecord)))),
                ("notify".into(), None),
            ],
        };
        assert_eq!(
            found_label_in(Locale::ja, &asked),
            "ai_summary: ai-summary — この冪等キーの記録はありません（確実な照会） / notify: 外部への副作用なし"
        );
        assert_eq!(
            found_label_in(Locale::en, &Found::Flags { steps: vec![("ai_summary".into(), false)] }),
            "ai_summary: not completed"
        );
        assert_eq!(found_label_in(Locale::en, &Found::Text("ai_summary: 未完了".into())), "ai_summary: 未完了");
    }
}
