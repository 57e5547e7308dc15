//! What changed of the facts a rerun plan was bound to, in the reader's words: one line per thing that changed,
//! with the step's name, before and after.
use crate::i18n::{Locale, td_string};
use crate::verdict_label_in;
use domain::rerun_plan::{Change, StepSnapshot};

/// The lines a change reads as; `name` gives a step's name in the reader's language.
pub fn plan_change_in(l: Locale, change: &Change, name: &dyn Fn(&str) -> String) -> Vec<String> {
    match change {
        Change::WorkflowVersion { approved, now: Some(now) } => {
            vec![td_string!(l, rerun.changed.workflow, approved = approved, now = now).to_string()]
        }
        Change::WorkflowVersion { approved, now: None } => {
            vec![td_string!(l, rerun.changed.workflow_gone, approved = approved).to_string()]
        }
        Change::FlagSet { step } => vec![td_string!(l, rerun.changed.flag_set, step = name(step)).to_string()],
        Change::Verdict { step, now } => {
            let (was, now) =
                (verdict_label_in(l, Some(domain::reconciliation::Verdict::NotExecuted)), verdict_label_in(l, *now));
            vec![td_string!(l, rerun.changed.verdict, step = name(step), was = was, now = now).to_string()]
        }
        Change::Step { step } => vec![td_string!(l, rerun.changed.step, step = name(step)).to_string()],
        Change::Fact { step, was: Some(was), now: Some(now) } => fact_lines(l, &name(step), was, now),
        Change::Fact { step, was: Some(_), now: None } => {
            vec![td_string!(l, rerun.changed.step_gone, step = name(step)).to_string()]
        }
        Change::Fact { step, was: None, .. } => {
            vec![td_string!(l, rerun.changed.step_new, step = name(step)).to_string()]
        }
        Change::Evidence => vec![td_string!(l, rerun.changed.evidence).to_string()],
        // Waiting for a person is no change of the facts.
        Change::Unconfirmed { .. } => Vec::new(),
    }
}

fn fact_lines(l: Locale, step: &str, was: &StepSnapshot, now: &StepSnapshot) -> Vec<String> {
    let mut lines = Vec::new();
    if was.verdict != now.verdict {
        let (was, now) = (verdict_label_in(l, was.verdict), verdict_label_in(l, now.verdict));
        lines.push(td_string!(l, rerun.changed.verdict, step = step, was = was, now = now).to_string());
    }
    if was.external_id != now.external_id {
        let record =
            |id: &Option<String>| id.clone().unwrap_or_else(|| td_string!(l, rerun.changed.no_record).to_string());
        let (was, now) = (record(&was.external_id), record(&now.external_id));
        lines.push(td_string!(l, rerun.changed.record, step = step, was = was, now = now).to_string());
    }
    if was.completed != now.completed {
        let flag = |set: bool| match set {
            true => td_string!(l, rerun.changed.flag_on),
            false => td_string!(l, rerun.changed.flag_off),
        };
        let (was, now) = (flag(was.completed), flag(now.completed));
        lines.push(td_string!(l, rerun.changed.flag, step = step, was = was, now = now).to_string());
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use domain::reconciliation::Verdict;

    #[test]
    fn a_changed_verdict_and_flag_read_step_by_step_before_and_after_in_both_languages() {
        let was = StepSnapshot { verdict: Some(Verdict::NotExecuted), external_id: None, completed: false };
        let now = StepSnapshot { verdict: Some(Verdict::Executed), external_id: Some("ord_7".into()), completed: true };
        let change = Change::Fact { step: "register_order".into(), was: Some(was), now: Some(now) };
        let name = |s: &str| if s == "register_order" { "受注の登録".to_string() } else { s.to_string() };
        let ja = plan_change_in(Locale::ja, &change, &name);
        assert_eq!(ja.len(), 3, "{ja:?}");
        assert!(ja[0].starts_with("受注の登録: 外部システムの照合結果 ") && ja[0].contains(" → "), "{ja:?}");
        assert_eq!(ja[1], "受注の登録: 外部の記録 なし → ord_7");
        assert_eq!(ja[2], "受注の登録: 完了フラグ 未設定 → 設定済み");
        let en = plan_change_in(Locale::en, &change, &|s: &str| s.to_string());
        assert_eq!(en[2], "register_order: completion flag not set → set");
        assert!(plan_change_in(Locale::en, &Change::Unconfirmed { step: "x".into() }, &name).is_empty());
    }
}
