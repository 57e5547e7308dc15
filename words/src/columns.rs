//! The columns of the CSV downloads in the reader's words (Excel users read these); tools ask for the codes
//! (`?columns=codes`), which stay as they are.
use crate::i18n::{Locale, td_string};

/// A column's heading in the reader's language; `None` for a code without words.
pub fn column_in(l: Locale, code: &str) -> Option<&'static str> {
    let words = match code {
        "seq" => td_string!(l, common.column.seq),
        "at" => td_string!(l, common.column.at),
        "actor_kind" => td_string!(l, common.column.actor_kind),
        "actor_id" => td_string!(l, common.column.actor_id),
        "actor_label" => td_string!(l, common.column.actor_label),
        "action" => td_string!(l, common.column.action),
        "object_type" => td_string!(l, common.column.object_type),
        "object_id" => td_string!(l, common.column.object_id),
        "department" => td_string!(l, common.column.department),
        "before" => td_string!(l, common.column.before),
        "after" => td_string!(l, common.column.after),
        "reason" => td_string!(l, common.column.reason),
        "request_id" => td_string!(l, common.column.request_id),
        "prev_hash" => td_string!(l, common.column.prev_hash),
        "hash" => td_string!(l, common.column.hash),
        "period" => td_string!(l, common.column.period),
        "start" => td_string!(l, common.column.start),
        "end" => td_string!(l, common.column.end),
        "indicator" => td_string!(l, common.column.indicator),
        "unit" => td_string!(l, common.column.unit),
        "value" => td_string!(l, common.column.value),
        "part" => td_string!(l, common.column.part),
        "whole" => td_string!(l, common.column.whole),
        "threshold" => td_string!(l, common.column.threshold),
        "fault" => td_string!(l, common.column.fault),
        "process_id" => td_string!(l, common.column.process_id),
        "expected_event" => td_string!(l, common.column.expected_event),
        "event" => td_string!(l, common.column.event),
        "stalled_at" => td_string!(l, common.column.stalled_at),
        "decision" => td_string!(l, common.column.decision),
        "decided_by" => td_string!(l, common.column.decided_by),
        "decided_at" => td_string!(l, common.column.decided_at),
        "seconds_to_decide" => td_string!(l, common.column.seconds_to_decide),
        "matches_table" => td_string!(l, common.column.matches_table),
        _ => return None,
    };
    Some(words)
}

/// A CSV file's heading row: each column's words in `language`, or the codes when no language is asked for.
pub fn header_in(language: Option<Locale>, columns: &[&str]) -> Vec<String> {
    let word = |code: &str| language.and_then(|l| column_in(l, code)).unwrap_or(code).to_string();
    columns.iter().map(|code| word(code)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_column_of_every_csv_download_has_words_in_both_languages() {
        let downloads = [
            &domain::audit_export::CSV_COLUMNS[..],
            &domain::indicators::REVIEW_CSV_COLUMNS[..],
            &domain::drills::REPORT_CSV_COLUMNS[..],
        ];
        for columns in downloads {
            for l in [Locale::ja, Locale::en] {
                let header = header_in(Some(l), columns);
                for (code, words) in columns.iter().zip(&header) {
                    assert!(column_in(l, code).is_some() && words != code, "{code} in {l:?}: {words}");
                }
            }
            assert_eq!(header_in(None, columns), columns.iter().map(|c| c.to_string()).collect::<Vec<_>>());
        }
    }
}
