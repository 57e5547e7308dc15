//! The pre-rerun checklist: the five checks of the source document. The system fills each in from the data,
//! with the evidence it used; staff confirm each with a comment; the fifth needs the cause class and text.
use super::invalid::{Invalid, Rule};
use super::reconciliation::Verdict;
use super::stall::FailureClass;
use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Check {
    /// (1) The process ID is recorded.
    ProcessIdRecorded,
    /// (2) The outside system's log says not sent / not issued.
    OutsideSaysNotDone,
    /// (3) The idempotency key is unused.
    KeyUnused,
    /// (4) The completion flag is not set.
    FlagNotSet,
    /// (5) The error message and its cause are analysed.
    CauseAnalysed,
}

impl Check {
    pub const ALL: [Check; 5] = [
        Check::ProcessIdRecorded,
        Check::OutsideSaysNotDone,
        Check::KeyUnused,
        Check::FlagNotSet,
        Check::CauseAnalysed,
    ];

    pub fn number(self) -> i64 {
        Check::ALL.iter().position(|c| *c == self).map_or(0, |i| i as i64 + 1)
    }

    pub fn from_number(n: i64) -> Option<Check> {
        usize::try_from(n - 1).ok().and_then(|i| Check::ALL.get(i).copied())
    }

    pub fn label(self) -> &'static str {
        match self {
            Check::ProcessIdRecorded => "プロセス ID が記録されている",
            Check::OutsideSaysNotDone => "外部システムのログで未送信・未発行を確認した",
            Check::KeyUnused => "冪等キーが未使用である",
            Check::FlagNotSet => "完了フラグが立っていない",
            Check::CauseAnalysed => "エラーメッセージと原因を分析した",
        }
    }
}

/// One planned step as the checks see it.
pub struct CheckedStep<'a> {
    pub name: &'a str,
    pub idempotency_key: &'a str,
    pub completed: bool,
    pub verdict: Option<Verdict>,
    pub connector: Option<&'a str>,
    pub evidence: Option<&'a str>,
}

/// What the system found for one check: whether it holds, and on what evidence.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Prefill {
    pub check: Check,
    pub holds: bool,
    pub evidence: String,
}

/// Fills in the five checks from the operation and the planned steps.
pub fn prefill(process_id: &str, error: Option<&str>, steps: &[CheckedStep<'_>]) -> Vec<Prefill> {
    let all = |f: &dyn Fn(&CheckedStep<'_>) -> bool| !steps.is_empty() && steps.iter().all(f);
    let list = |f: &dyn Fn(&CheckedStep<'_>) -> String| steps.iter().map(f).collect::<Vec<_>>().join(" / ");
    let unchecked = |s: &CheckedStep<'_>| s.connector.is_none();
    vec![
        Prefill {
            check: Check::ProcessIdRecorded,
            holds: !process_id.is_empty(),
            evidence: format!("process_id {process_id}"),
        },
        Prefill {
            check: Check::OutsideSaysNotDone,
            holds: all(&|s| unchecked(s) || s.verdict == Some(Verdict::NotExecuted)),
            evidence: list(&|s| match s.connector {
                Some(c) => format!("{}: {} — {}", s.name, c, s.evidence.unwrap_or("—")),
                None => format!("{}: 外部への副作用なし", s.name),
            }),
        },
        Prefill {
            check: Check::KeyUnused,
            holds: all(&|s| unchecked(s) || s.verdict == Some(Verdict::NotExecuted)),
            evidence: list(&|s| format!("{}: {}", s.name, s.idempotency_key)),
        },
        Prefill {
            check: Check::FlagNotSet,
            holds: all(&|s| !s.completed),
            evidence: list(&|s| format!("{}: {}", s.name, if s.completed { "完了済み" } else { "未完了" })),
        },
        Prefill { check: Check::CauseAnalysed, holds: true, evidence: error.unwrap_or("—").to_string() },
    ]
}

/// A person's confirmation of one check: a comment always; for the fifth, the cause class and text too.
pub fn confirmation(
    prefill: &Prefill,
    comment: &str,
    cause: Option<(FailureClass, &str)>,
) -> Result<(), (&'static str, Invalid)> {
    if !prefill.holds {
        return Err((
            "check",
            Invalid::new(Rule::NotSatisfied, "the system could not confirm this check, so it cannot be confirmed"),
        ));
    }
    if comment.trim().is_empty() {
        return Err(("comment", Invalid::new(Rule::Required, "a comment on what was checked is required")));
    }
    if prefill.check == Check::CauseAnalysed && cause.is_none_or(|(_, text)| text.trim().is_empty()) {
        return Err(("cause", Invalid::new(Rule::CauseRequired, "the cause's class and description are required")));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(verdict: Option<Verdict>, completed: bool) -> CheckedStep<'static> {
        CheckedStep {
            name: "ai_summary",
            idempotency_key: "ORD-1002-ai_summary",
            completed,
            verdict,
            connector: Some("ai-summary"),
            evidence: Some("no record for this idempotency key"),
        }
    }

    #[test]
    fn the_five_checks_are_filled_in_with_their_evidence() {
        let checks =
            prefill("ORD-1002", Some("not started within 900 s"), &[summary(Some(Verdict::NotExecuted), false)]);
        assert_eq!(checks.iter().map(|c| c.check).collect::<Vec<_>>(), Check::ALL.to_vec());
        assert!(checks.iter().all(|c| c.holds));
        assert!(checks[1].evidence.contains("ai-summary") && checks[2].evidence.contains("ORD-1002-ai_summary"));
        assert_eq!(checks[4].evidence, "not started within 900 s");
    }

    #[test]
    fn a_step_not_proven_absent_or_already_flagged_fails_its_checks() {
        let checks = prefill("P", None, &[summary(Some(Verdict::Unknown), true)]);
        assert!(!checks[1].holds && !checks[2].holds && !checks[3].holds);
        assert!(prefill("P", None, &[]).iter().take(4).skip(1).all(|c| !c.holds), "no steps, nothing to confirm");
    }

    #[test]
    fn confirming_needs_a_comment_a_holding_check_and_for_the_fifth_a_cause() {
        let checks = prefill("P", None, &[summary(Some(Verdict::NotExecuted), false)]);
        assert!(confirmation(&checks[0], "確認済み", None).is_ok());
        assert_eq!(confirmation(&checks[0], "  ", None).unwrap_err().0, "comment");
        assert_eq!(confirmation(&checks[4], "見た", None).unwrap_err().0, "cause");
        assert!(confirmation(&checks[4], "見た", Some((FailureClass::SystemError, "起動順の不具合"))).is_ok());
        let failing = prefill("P", None, &[summary(Some(Verdict::Unknown), false)]);
        assert_eq!(confirmation(&failing[1], "ok", None).unwrap_err().0, "check");
    }

    #[test]
    fn checks_are_numbered_one_to_five() {
        assert_eq!(Check::CauseAnalysed.number(), 5);
        assert_eq!(Check::from_number(1), Some(Check::ProcessIdRecorded));
        assert_eq!(Check::from_number(6), None);
    }
}
