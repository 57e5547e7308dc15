//! Server errors in the reader's language: by the refused field's rule, by the conflict's problem slug, else a
//! translated headline with the server's (English) sentence.
use crate::contract::{AppError, Conflict, FieldError};
use crate::domain::invalid::{Field, Rule, ids_in};
use crate::i18n::{Locale, td_string};

pub fn error_message(error: &AppError) -> String {
    error_in(super::labels::locale(), error)
}

fn with_detail(headline: &str, detail: &str) -> String {
    format!("{headline}: {detail}")
}

pub fn error_in(l: Locale, error: &AppError) -> String {
    match error {
        // Only the JSON API meets these (in English, as its every answer).
        AppError::Unauthorized | AppError::ApiToken(_) => td_string!(l, common.error.unauthorized).to_string(),
        AppError::Forbidden => td_string!(l, common.error.forbidden).to_string(),
        AppError::SignInAgain => td_string!(l, common.error.sign_in_again).to_string(),
        AppError::NotFound => td_string!(l, common.error.not_found).to_string(),
        AppError::Internal => td_string!(l, common.error.internal).to_string(),
        AppError::TooManyRequests { retry_after_secs } => {
            td_string!(l, common.error.too_many_requests, seconds = *retry_after_secs).to_string()
        }
        AppError::Busy { retry_after_secs } => {
            td_string!(l, common.error.busy, seconds = *retry_after_secs).to_string()
        }
        AppError::Validation(fields) => fields.iter().map(|f| field_in(l, f, None)).collect::<Vec<_>>().join(" "),
        AppError::Conflict { problem, .. } => conflict_in(l, *problem).to_string(),
        AppError::BadRequest(detail) => with_detail(td_string!(l, common.error.bad_request), detail),
        AppError::Transport(detail) => with_detail(td_string!(l, common.error.transport), detail),
    }
}

/// One refused field in the reader's words; `label`: a form's own name for the field, instead of the shared one.
pub fn field_in(l: Locale, f: &FieldError, label: Option<&str>) -> String {
    let Some(rule) = f.rule else { return with_detail(td_string!(l, common.error.validation), &f.message) };
    let problem = match rule {
        // Whole sentences: the field goes without saying.
        Rule::WrongSignIn => return td_string!(l, common.error.wrong_sign_in).to_string(),
        Rule::WrongPassword => return td_string!(l, common.error.wrong_password).to_string(),
        Rule::ChecksUnconfirmed => return td_string!(l, common.error.checks_unconfirmed).to_string(),
        Rule::KeyAloneUnconfirmed => return td_string!(l, common.error.key_alone_unconfirmed).to_string(),
        Rule::NotSatisfied => return td_string!(l, common.error.not_satisfied).to_string(),
        Rule::CauseRequired => return td_string!(l, common.error.cause_required).to_string(),
        Rule::NothingSelected => return td_string!(l, common.error.nothing_selected).to_string(),
        Rule::TooMany => return td_string!(l, common.error.too_many).to_string(),
        Rule::OneDepartment => return td_string!(l, common.error.one_department).to_string(),
        Rule::NotStartedYet => return td_string!(l, common.error.not_started_yet).to_string(),
        Rule::Malformed => return td_string!(l, common.error.malformed).to_string(),
        Rule::NotByHand => return td_string!(l, common.error.not_by_hand).to_string(),
        Rule::Unknown if matches!(f.field, Field::ProcessId | Field::ProcessIds) => {
            let ids = ids_in(&f.message).unwrap_or_default();
            return td_string!(l, common.error.unknown_process_ids, ids = ids).to_string();
        }
        Rule::Required => td_string!(l, common.error.rule.required),
        Rule::TooShort => td_string!(l, common.error.rule.too_short),
        Rule::TooLong => td_string!(l, common.error.rule.too_long),
        Rule::BadCharacter => td_string!(l, common.error.rule.bad_character),
        Rule::NotAnEmail => td_string!(l, common.error.rule.not_an_email),
        Rule::TooCommon => td_string!(l, common.error.rule.too_common),
        Rule::Unknown => td_string!(l, common.error.rule.unknown),
        Rule::OutOfRange => td_string!(l, common.error.rule.out_of_range),
        Rule::NotATime => td_string!(l, common.error.rule.not_a_time),
        Rule::NoneChosen => td_string!(l, common.error.rule.none_chosen),
    };
    let field = label.map_or_else(|| field_label(l, f.field), str::to_string);
    td_string!(l, common.error.field_problem, field = field, problem = problem).to_string()
}

fn field_label(l: Locale, field: Field) -> String {
    use Field as F;
    let label = match field {
        F::Reason => td_string!(l, common.field.reason),
        F::Comment => td_string!(l, common.field.comment),
        F::Evidence => td_string!(l, common.field.evidence),
        F::Password | F::NewPassword => td_string!(l, common.field.new_password),
        F::CurrentPassword => td_string!(l, common.field.current_password),
        F::Username => td_string!(l, common.field.username),
        F::DisplayName => td_string!(l, common.field.display_name),
        F::Email => td_string!(l, common.field.email),
        F::Department | F::Departments => td_string!(l, common.field.departments),
        F::Name => td_string!(l, common.field.name),
        F::Roles => td_string!(l, common.field.roles),
        F::Format => td_string!(l, common.field.format),
        F::Verdict => td_string!(l, common.field.verdict),
        F::CauseClass => td_string!(l, common.field.cause_class),
        F::CauseText | F::Cause => td_string!(l, common.field.cause_text),
        F::Number => td_string!(l, common.field.number),
        F::Step => td_string!(l, common.field.step),
        F::Minutes => td_string!(l, common.field.minutes),
        F::Note => td_string!(l, common.field.note),
        F::Period => td_string!(l, common.field.period),
        F::Title => td_string!(l, common.field.title),
        F::Language => td_string!(l, common.language.label),
        F::TimeZone => td_string!(l, common.account.time_zone),
        F::RatePerMinute => td_string!(l, rerun.batch.field.rate),
        F::From => td_string!(l, audit.field.from),
        F::To => td_string!(l, audit.field.to),
        F::RegisteredFrom => td_string!(l, board.bulk.registered_from),
        F::RegisteredTo => td_string!(l, board.bulk.registered_to),
        F::Faults => td_string!(l, admin.drills.faults),
        F::Day => td_string!(l, review.filter.day),
        // The incident forms name their own fields (`ui::incidents`); the others are members of a JSON API body
        // or of a request made by hand, whose name is the clearest word for them.
        F::Body
        | F::Channel
        | F::Chart
        | F::Check
        | F::Checklist
        | F::Content
        | F::Description
        | F::DueOn
        | F::Error
        | F::Impact
        | F::Memberships
        | F::OccurredAt
        | F::Owner
        | F::ProcessId
        | F::ProcessIds
        | F::Request
        | F::Response
        | F::ResultId
        | F::Selection
        | F::Seq
        | F::Status
        | F::Steps
        | F::TreeSize
        | F::Ts
        | F::Usage
        | F::Workflow => field.as_str(),
    };
    label.to_string()
}

/// Every conflict in the reader's words (a kind without words does not compile).
pub fn conflict_in(l: Locale, problem: Conflict) -> &'static str {
    use Conflict as C;
    match problem {
        C::UsernameTaken => td_string!(l, common.conflict.username_taken),
        C::SelfDisable => td_string!(l, common.conflict.self_disable),
        C::OwnAccess => td_string!(l, common.conflict.own_access),
        C::ClientNameTaken => td_string!(l, common.conflict.client_name_taken),
        C::NotPending => td_string!(l, common.conflict.not_pending),
        C::Expired => td_string!(l, common.conflict.expired),
        C::AlreadyDecided => td_string!(l, common.conflict.already_decided),
        C::NotStalled => td_string!(l, common.conflict.not_stalled),
        C::NotOnHold => td_string!(l, common.conflict.not_on_hold),
        C::WorkflowNotConfigured => td_string!(l, common.conflict.workflow_not_configured),
        C::RequestOpen => td_string!(l, common.conflict.request_open),
        C::PlanChanged => td_string!(l, common.conflict.plan_changed),
        C::NotDraft => td_string!(l, common.conflict.not_draft),
        C::NotCancellable => td_string!(l, common.conflict.not_cancellable),
        C::RequestState => td_string!(l, common.conflict.request_state),
        C::BatchState => td_string!(l, common.conflict.batch_state),
        C::NothingToRequest => td_string!(l, common.conflict.nothing_to_request),
        C::PartOfBatch => td_string!(l, common.conflict.part_of_batch),
        C::AlreadyPaused => td_string!(l, common.conflict.already_paused),
        C::NotPaused => td_string!(l, common.conflict.not_paused),
        C::NotADrillDatabase => td_string!(l, common.conflict.not_a_drill_database),
        C::DrillRunning => td_string!(l, common.conflict.drill_running),
        C::DrillEnded => td_string!(l, common.conflict.drill_ended),
        C::NoDemoIntegration => td_string!(l, common.conflict.no_demo_integration),
        C::AlreadyLinked => td_string!(l, common.conflict.already_linked),
        C::AlreadyAcknowledged => td_string!(l, common.conflict.already_acknowledged),
        C::ActionUnchanged => td_string!(l, common.conflict.action_unchanged),
        C::AlreadySignedOff => td_string!(l, common.conflict.already_signed_off),
        C::ChatAccountTaken => td_string!(l, common.account.slack_taken),
        C::IdempotencyKeyInFlight => td_string!(l, common.conflict.idempotency_key_in_flight),
        C::IdempotencyKeyMismatch => td_string!(l, common.conflict.idempotency_key_mismatch),
        C::IdempotencyKeyTaken => td_string!(l, common.conflict.idempotency_key_taken),
        C::ProcessIdExists => td_string!(l, common.conflict.process_id_exists),
        C::DirectoryManaged => td_string!(l, common.conflict.directory_managed),
        C::NoCompanySignIn => td_string!(l, common.conflict.no_company_sign_in),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::invalid::{Invalid, unknown_process_ids};

    #[test]
    fn a_refused_field_reads_in_either_language_with_its_name() {
        let empty = AppError::invalid(Field::Reason, Invalid::new(Rule::Required, "a reason is required"));
        assert_eq!(error_in(Locale::ja, &empty), "理由: 入力してください");
        assert_eq!(error_in(Locale::en, &empty), "Reason: required");
        let wrong = AppError::invalid(
            Field::Password,
            Invalid::new(Rule::WrongSignIn, "the sign-in name or the password is wrong"),
        );
        assert_eq!(error_in(Locale::en, &wrong), "The sign-in name or the password is wrong.");
        let mixed = AppError::invalid(
            Field::Department,
            Invalid::new(Rule::OneDepartment, "a bulk rerun is for one department"),
        );
        assert!(error_in(Locale::ja, &mixed).starts_with("一括再実行は一つの部門ごとです"));
        let rate =
            AppError::invalid(Field::RatePerMinute, Invalid::new(Rule::OutOfRange, "the rate is 1 to 60 per minute"));
        assert_eq!(error_in(Locale::ja, &rate), "送信の速さ: 許される範囲の外です");
    }

    #[test]
    fn unknown_process_ids_are_named_in_the_readers_language() {
        let unknown = AppError::invalid(Field::ProcessIds, unknown_process_ids(&["ORD-9", "INV-2001"]));
        assert_eq!(
            error_in(Locale::ja, &unknown),
            "次のプロセス ID のオペレーションは、あなたの部門に見つかりません: ORD-9, INV-2001"
        );
        assert_eq!(
            error_in(Locale::en, &unknown),
            "No operation of your departments has these process IDs: ORD-9, INV-2001"
        );
    }

    #[test]
    fn every_conflict_is_a_sentence_of_its_own_in_either_language() {
        let taken = AppError::conflict(Conflict::UsernameTaken, "the sign-in name 'sato' is taken");
        assert_eq!(error_in(Locale::ja, &taken), "このサインイン名はすでに使われています。");
        for l in [Locale::ja, Locale::en] {
            let mut sentences: Vec<&str> = Conflict::ALL.iter().map(|k| conflict_in(l, *k)).collect();
            assert!(sentences.iter().all(|s| !s.is_empty()), "{l:?}");
            sentences.sort_unstable();
            sentences.dedup();
            assert_eq!(sentences.len(), Conflict::ALL.len(), "two conflicts read the same in {l:?}");
        }
        assert_ne!(conflict_in(Locale::ja, Conflict::BatchState), conflict_in(Locale::en, Conflict::BatchState));
    }

    #[test]
    fn the_refusals_that_once_showed_the_servers_sentence_have_their_rule() {
        let format = "xml".parse::<crate::domain::audit_export::ExportFormat>().unwrap_err();
        assert_eq!(error_in(Locale::ja, &AppError::invalid(Field::Format, format)), "形式: 登録されていない値です");
        let by_hand = AppError::invalid(Field::Verdict, Invalid::new(Rule::NotByHand, "record what was found out"));
        assert!(error_in(Locale::en, &by_hand).starts_with("Only what was found out can be recorded by hand"));
        let made_by_hand = AppError::invalid(Field::Request, Invalid::new(Rule::Malformed, "missing field `verdict`"));
        assert_eq!(
            error_in(Locale::ja, &made_by_hand),
            "送信された値の形式が正しくありません。画面から操作し直してください。"
        );
    }
}
