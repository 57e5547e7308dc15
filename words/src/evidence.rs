//! What a reconciliation's verdict rests on, said in the reader's language (the API and exports keep the
//! English `summary`).
use crate::i18n::{Locale, td_string};
use domain::reconciliation::{Basis, LookupProblem, NotCompared, OutsideStatus};

pub fn basis_label_in(l: Locale, basis: &Basis) -> String {
    match basis {
        Basis::Records { count, status, differs_in, content_not_compared, not_compared } => {
            let status = status.as_deref().map_or_else(|| "—".to_string(), |s| outside_status_label_in(l, s));
            let mut text = td_string!(l, operation.basis.records, count = *count, status = status).to_string();
            if !differs_in.is_empty() {
                let fields = differs_in.join(td_string!(l, operation.list_separator));
                text.push_str(&td_string!(l, operation.basis.differs_in, fields = fields).to_string());
            }
            if *count > 1 {
                text.push_str(td_string!(l, operation.basis.many));
            }
            let not_compared = not_compared.or(content_not_compared.then_some(NotCompared::NoContent));
            text.push_str(match not_compared {
                Some(NotCompared::NoContent) => td_string!(l, operation.basis.content_not_compared),
                Some(NotCompared::NoFieldRead) => td_string!(l, operation.basis.no_field_read),
                Some(NotCompared::NoCommonField) => td_string!(l, operation.basis.no_common_field),
                None => "",
            });
            text
        }
        Basis::NoRecord => td_string!(l, operation.basis.no_record).to_string(),
        Basis::NotFoundProvesNothing => td_string!(l, operation.basis.not_found_proves_nothing).to_string(),
        Basis::NotFoundYet { delay_seconds } => {
            td_string!(l, operation.basis.not_found_yet, seconds = *delay_seconds).to_string()
        }
        Basis::NotFoundPastRetention { retention_days } => {
            td_string!(l, operation.basis.not_found_past_retention, days = *retention_days).to_string()
        }
        Basis::EmptyResult => td_string!(l, operation.basis.empty_result).to_string(),
        Basis::LookupFailed { detail } => {
            let detail = problem_label_in(l, &LookupProblem::parse(detail));
            td_string!(l, operation.basis.lookup_failed, detail = detail).to_string()
        }
        Basis::NoLookup { detail } => {
            let detail = problem_label_in(l, &LookupProblem::parse(detail));
            td_string!(l, operation.basis.no_lookup, detail = detail).to_string()
        }
        // What a person wrote, and older sentences this version does not recognise, stay as written.
        Basis::ByHand { text } | Basis::Text { text } => text.clone(),
    }
}

/// An outside system's status word in the reader's language when it is a common one, else as written. The
/// systems' words are English: an English page shows them as the API does.
pub fn outside_status_label_in(l: Locale, word: &str) -> String {
    if l == Locale::en {
        return word.to_string();
    }
    match OutsideStatus::read(word) {
        Some(OutsideStatus::Done) => td_string!(l, operation.outside_status.done).to_string(),
        Some(OutsideStatus::InProgress) => td_string!(l, operation.outside_status.in_progress).to_string(),
        Some(OutsideStatus::Waiting) => td_string!(l, operation.outside_status.waiting).to_string(),
        Some(OutsideStatus::Failed) => td_string!(l, operation.outside_status.failed).to_string(),
        Some(OutsideStatus::Cancelled) => td_string!(l, operation.outside_status.cancelled).to_string(),
        None => word.to_string(),
    }
}

/// Why a look-up gave no answer; a library's technical words stay as they are.
pub fn problem_label_in(l: Locale, problem: &LookupProblem) -> String {
    match problem {
        LookupProblem::NoAnswerWithin { seconds } => {
            td_string!(l, operation.basis.problem.no_answer_within, seconds = *seconds).to_string()
        }
        LookupProblem::HttpStatus { status } => {
            td_string!(l, operation.basis.problem.http_status, status = *status).to_string()
        }
        LookupProblem::NotJson => td_string!(l, operation.basis.problem.not_json).to_string(),
        LookupProblem::NoResultId => td_string!(l, operation.basis.problem.no_result_id).to_string(),
        LookupProblem::Other { detail } => detail.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_basis_reads_in_japanese_and_in_english() {
        let double = Basis::Records {
            count: 2,
            status: Some("completed".into()),
            differs_in: vec!["amount".into()],
            content_not_compared: false,
            not_compared: None,
        };
        assert_eq!(
            basis_label_in(Locale::ja, &double),
            "記録 2 件・状態 完了；amount が異なります；一つのキーで複数回実行されています"
        );
        assert_eq!(basis_label_in(Locale::en, &double), double.summary(), "English says what the API says");
        let unchecked = Basis::Records {
            count: 1,
            status: Some("completed".into()),
            differs_in: vec![],
            content_not_compared: true,
            not_compared: None,
        };
        assert_eq!(
            basis_label_in(Locale::ja, &unchecked),
            "記録 1 件・状態 完了；ステップの内容が登録されていないため、内容は照合していません"
        );
        assert_eq!(basis_label_in(Locale::en, &unchecked), unchecked.summary());
        for why in [NotCompared::NoFieldRead, NotCompared::NoCommonField] {
            let unchecked = Basis::Records {
                count: 1,
                status: None,
                differs_in: vec![],
                content_not_compared: false,
                not_compared: Some(why),
            };
            assert_eq!(basis_label_in(Locale::en, &unchecked), unchecked.summary(), "{why:?}");
            assert!(basis_label_in(Locale::ja, &unchecked).contains("照合していません"), "{why:?}");
        }
        assert_eq!(basis_label_in(Locale::ja, &Basis::NoRecord), "この冪等キーの記録はありません（確実な照会）");
        let timeout = Basis::LookupFailed { detail: LookupProblem::NoAnswerWithin { seconds: 10 }.text() };
        assert_eq!(basis_label_in(Locale::ja, &timeout), "照会に失敗しました（10 秒以内に応答がありません）");
        let refused = Basis::LookupFailed { detail: LookupProblem::HttpStatus { status: 401 }.text() };
        assert_eq!(basis_label_in(Locale::en, &refused), "The look-up failed (the provider answered HTTP 401)");
        assert_eq!(
            basis_label_in(Locale::en, &Basis::NotFoundYet { delay_seconds: 30 }),
            "Not found yet; records may take 30 s to appear"
        );
    }
}
