//! The pre-rerun checklist: the five checks of the source document. The system fills each in from the data,
//! with the evidence it used; staff confirm each with a comment; the fifth needs the cause class and text.
use super::invalid::{Invalid, Rule};
use super::reconciliation::{Basis, Verdict};
use super::stall::FailureClass;
use crate::invalid::Field;
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
}

/// One planned step as the checks see it.
pub struct CheckedStep<'a> {
    pub name: &'a str,
    pub idempotency_key: &'a str,
    pub completed: bool,
    pub verdict: Option<Verdict>,
    pub connector: Option<&'a str>,
    pub basis: Option<Basis>,
}

/// The error a step reported, as the fifth check starts from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepError {
    pub step: String,
    pub class: String,
    pub message: Option<String>,
}

/// A planned step and, when it acts outside, the connector asked and what its verdict rests on.
pub type OutsideStep = (String, Option<(String, Option<Basis>)>);

/// What the system found for one check, as facts (stored as JSON); each page says it in its reader's language.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Found {
    ProcessId {
        process_id: String,
    },
    /// Each planned step: the outside system asked and what the verdict rests on; none when it has no
    /// side effect outside.
    OutsideSystems {
        steps: Vec<OutsideStep>,
    },
    /// Each planned step and its idempotency key.
    Keys {
        steps: Vec<(String, String)>,
    },
    /// Each planned step and whether its completion flag is set.
    Flags {
        steps: Vec<(String, bool)>,
    },
    /// The first error a step reported, else the stall event.
    Cause {
        error: Option<StepError>,
        event: Option<String>,
    },
    /// Written before the facts were kept (a sentence): shown as it is.
    #[serde(untagged)]
    Text(String),
}

impl Found {
    /// What an outside system said, quoted as it said it: the error message of the fifth check.
    pub fn quote(&self) -> Option<&str> {
        match self {
            Found::Cause { error: Some(StepError { message, .. }), .. } => message.as_deref(),
            _ => None,
        }
    }

    pub fn to_stored(&self) -> String {
        serde_json::to_string(self).expect("findings serialize")
    }

    /// Stored facts, or the sentence an earlier version stored.
    pub fn from_stored(text: &str) -> Found {
        serde_json::from_str(text).unwrap_or_else(|_| Found::Text(text.to_string()))
    }
}

/// What the system found for one check: whether it holds, and on what evidence.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Prefill {
    pub check: Check,
    pub holds: bool,
    pub evidence: Found,
}

/// Fills in the five checks from the operation and the planned steps.
pub fn prefill(
    process_id: &str,
    (error, event): (Option<StepError>, Option<&str>),
    steps: &[CheckedStep<'_>],
) -> Vec<Prefill> {
    let all = |f: &dyn Fn(&CheckedStep<'_>) -> bool| !steps.is_empty() && steps.iter().all(f);
    let unchecked = |s: &CheckedStep<'_>| s.connector.is_none();
    let each = |f: &dyn Fn(&CheckedStep<'_>) -> bool| steps.iter().map(|s| (s.name.to_string(), f(s))).collect();
    vec![
        Prefill {
            check: Check::ProcessIdRecorded,
            holds: !process_id.is_empty(),
            evidence: Found::ProcessId { process_id: process_id.to_string() },
        },
        Prefill {
            check: Check::OutsideSaysNotDone,
            holds: all(&|s| unchecked(s) || s.verdict == Some(Verdict::NotExecuted)),
            evidence: Found::OutsideSystems {
                steps: steps
                    .iter()
                    .map(|s| (s.name.to_string(), s.connector.map(|c| (c.to_string(), s.basis.clone()))))
                    .collect(),
            },
        },
        Prefill {
            check: Check::KeyUnused,
            holds: all(&|s| unchecked(s) || s.verdict == Some(Verdict::NotExecuted)),
            evidence: Found::Keys {
                steps: steps.iter().map(|s| (s.name.to_string(), s.idempotency_key.to_string())).collect(),
            },
        },
        Prefill {
            check: Check::FlagNotSet,
            holds: all(&|s| !s.completed),
            evidence: Found::Flags { steps: each(&|s| s.completed) },
        },
        Prefill {
            check: Check::CauseAnalysed,
            holds: true,
            evidence: Found::Cause { error, event: event.map(str::to_string) },
        },
    ]
}

/// A person's confirmation of one check: a comment always; for the fifth, the cause class and text too.
pub fn confirmation(
    prefill: &Prefill,
    comment: &str,
    cause: Option<(FailureClass, &str)>,
) -> Result<(), (Field, Invalid)> {
    if !prefill.holds {
        return Err((
            Field::Check,
            Invalid::new(Rule::NotSatisfied, "the system could not confirm this check, so it cannot be confirmed"),
        ));
    }
    if comment.trim().is_empty() {
        return Err((Field::Comment, Invalid::new(Rule::Required, "a comment on what was checked is required")));
    }
    if prefill.check == Check::CauseAnalysed && cause.is_none_or(|(_, text)| text.trim().is_empty()) {
        return Err((
            Field::Cause,
            Invalid::new(Rule::CauseRequired, "the cause's class and description are required"),
        ));
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
            basis: Some(Basis::NoRecord),
        }
    }

    #[test]
    fn the_five_checks_are_filled_in_with_their_evidence() {
        let checks =
            prefill("ORD-1002", (None, Some("partial_success")), &[summary(Some(Verdict::NotExecuted), false)]);
        assert_eq!(checks.iter().map(|c| c.check).collect::<Vec<_>>(), Check::ALL.to_vec());
        assert!(checks.iter().all(|c| c.holds));
        let asked = vec![("ai_summary".to_string(), Some(("ai-summary".to_string(), Some(Basis::NoRecord))))];
        assert_eq!(checks[1].evidence, Found::OutsideSystems { steps: asked });
        let keys = vec![("ai_summary".to_string(), "ORD-1002-ai_summary".to_string())];
        assert_eq!(checks[2].evidence, Found::Keys { steps: keys });
        assert_eq!(checks[4].evidence, Found::Cause { error: None, event: Some("partial_success".into()) });
    }

    #[test]
    fn findings_are_stored_as_facts_and_an_older_sentence_reads_as_itself() {
        let flags = Found::Flags { steps: vec![("ai_summary".into(), false)] };
        assert_eq!(Found::from_stored(&flags.to_stored()), flags);
        let old = "ai_summary: 未完了";
        assert_eq!(Found::from_stored(old), Found::Text(old.into()));
        assert_eq!(Found::from_stored(&Found::Text(old.into()).to_stored()), Found::Text(old.into()));
    }

    #[test]
    fn a_step_not_proven_absent_or_already_flagged_fails_its_checks() {
        let checks = prefill("P", (None, None), &[summary(Some(Verdict::Unknown), true)]);
        assert!(!checks[1].holds && !checks[2].holds && !checks[3].holds);
        assert!(
            prefill("P", (None, None), &[]).iter().take(4).skip(1).all(|c| !c.holds),
            "no steps, nothing to confirm"
        );
    }

    #[test]
    fn confirming_needs_a_comment_a_holding_check_and_for_the_fifth_a_cause() {
        let checks = prefill("P", (None, None), &[summary(Some(Verdict::NotExecuted), false)]);
        assert!(confirmation(&checks[0], "確認済み", None).is_ok());
        assert_eq!(confirmation(&checks[0], "  ", None).unwrap_err().0, Field::Comment);
        assert_eq!(confirmation(&checks[4], "見た", None).unwrap_err().0, Field::Cause);
        assert!(confirmation(&checks[4], "見た", Some((FailureClass::SystemError, "起動順の不具合"))).is_ok());
        let failing = prefill("P", (None, None), &[summary(Some(Verdict::Unknown), false)]);
        assert_eq!(confirmation(&failing[1], "ok", None).unwrap_err().0, Field::Check);
    }

    #[test]
    fn checks_are_numbered_one_to_five() {
        assert_eq!(Check::CauseAnalysed.number(), 5);
        assert_eq!(Check::from_number(1), Some(Check::ProcessIdRecorded));
        assert_eq!(Check::from_number(6), None);
    }
}
