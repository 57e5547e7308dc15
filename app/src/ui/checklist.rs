//! The checklist's words and fields, shared by a rerun request and a bulk rerun: why a step blocks, the checks'
//! titles, who confirmed a check, the fields of a confirmation, why the reader may not decide, and the decisions.
use super::labels::{failure_class_label, local_time, locale, slot, with_entered};
use crate::contract::reruns::DecisionView;
use crate::domain::approval::{Decision, MakerPart, Standing};
use crate::domain::checklist::Check;
use crate::domain::rerun_plan::BlockedBecause;
use crate::domain::stall::FailureClass;
use crate::i18n::td_string;
use leptos::prelude::*;

/// Why a step blocks the request, in words.
pub fn blocked_label(why: BlockedBecause) -> &'static str {
    let l = locale();
    match why {
        BlockedBecause::NotLookedUp => td_string!(l, rerun.blocked.not_looked_up),
        BlockedBecause::ResultUnknown => td_string!(l, rerun.blocked.result_unknown),
        BlockedBecause::StillInProgress => td_string!(l, rerun.blocked.still_in_progress),
        BlockedBecause::ContentMismatch => td_string!(l, rerun.blocked.content_mismatch),
        BlockedBecause::ContentNotCompared => td_string!(l, rerun.blocked.content_not_compared),
        BlockedBecause::LookupFailed => td_string!(l, rerun.blocked.lookup_failed),
    }
}

/// The title of one of the five checks (by its number; `None` for a number outside 1 to 5).
pub fn check_label(number: i64) -> Option<&'static str> {
    Check::from_number(number).map(|check| crate::words::checklist::check_label_in(locale(), check))
}

/// Who confirmed a check, when, with what comment (and, for the fifth, the cause).
pub fn confirmed_line(
    by: &Option<String>,
    at: chrono::DateTime<chrono::Utc>,
    comment: &Option<String>,
    cause_class: &Option<FailureClass>,
    cause_text: &Option<String>,
) -> impl IntoView + use<> {
    let l = locale();
    let cause = cause_class.map(|k| {
        let sentence = td_string!(l, rerun.check.cause, class = failure_class_label(k), text = slot(0));
        with_entered(&sentence.to_string(), &[cause_text.as_deref().unwrap_or_default()])
    });
    view! {
        <p class="ok" data-testid="confirmed">
            <span data-entered>{by.clone().unwrap_or_default()}</span>
            " · "
            {local_time(at)}
            " · "
            <span data-entered>{comment.clone().unwrap_or_default()}</span>
            {cause}
        </p>
    }
}

/// The fields of a check's confirmation (a request's or a bulk rerun's): the cause for the fifth (`likely` chosen
/// first: the failure class the operations have), and a comment.
pub fn confirmation_fields(number: i64, likely: Option<FailureClass>) -> impl IntoView {
    let l = locale();
    let field = move |name: &str| format!("check-{number}-{name}");
    view! {
        {(number == 5)
            .then(|| {
                view! {
                    <label for=field("cause-class")>{td_string!(l, rerun.check.cause_class)}</label>
                    <select id=field("cause-class") name="cause_class">
                        {FailureClass::ALL
                            .into_iter()
                            .map(|k| {
                                view! {
                                    <option value=k.as_str() selected=likely == Some(k)>
                                        {failure_class_label(k)}
                                    </option>
                                }
                            })
                            .collect_view()}
                    </select>
                    <label for=field("cause-text")>{td_string!(l, rerun.check.cause_text)}</label>
                    <textarea id=field("cause-text") name="cause_text" rows="2" required></textarea>
                }
            })}
        <label for=field("comment")>{td_string!(l, rerun.check.comment)}</label>
        <input id=field("comment") name="comment" required />
    }
}

/// Why the reader may not decide, in words.
pub fn standing_label(standing: Standing) -> String {
    let l = locale();
    match standing {
        Standing::Maker(part) => td_string!(l, rerun.standing.maker, part = maker_part_label(part)).to_string(),
        Standing::NotOwner => td_string!(l, rerun.standing.not_owner).to_string(),
        Standing::Decided => td_string!(l, rerun.standing.decided).to_string(),
        Standing::NotWaiting => td_string!(l, rerun.standing.not_waiting).to_string(),
        Standing::MayDecide | Standing::InBatch => String::new(),
    }
}

/// What a person did to make a request (the maker rule names it).
pub fn maker_part_label(part: MakerPart) -> &'static str {
    let l = locale();
    match part {
        MakerPart::Started => td_string!(l, rerun.maker.started),
        MakerPart::ConfirmedCheck => td_string!(l, rerun.maker.confirmed_check),
        MakerPart::Submitted => td_string!(l, rerun.maker.submitted),
        MakerPart::RecordedVerdict => td_string!(l, rerun.maker.recorded_verdict),
        MakerPart::Created => td_string!(l, rerun.maker.created),
        MakerPart::Requested => td_string!(l, rerun.maker.requested),
    }
}

/// The owners' decisions so far (of a request or a bulk rerun), each with its approver, time and comment.
#[component]
pub fn Decisions(decisions: Vec<DecisionView>, title: &'static str, testid: &'static str) -> impl IntoView {
    let l = locale();
    view! {
        <section aria-labelledby="decisions-title">
            <h2 id="decisions-title">{title}</h2>
            <ul data-testid=testid>
                {decisions
                    .iter()
                    .map(|d| {
                        view! {
                            <li>
                                {if d.decision == Decision::Approve {
                                    td_string!(l, rerun.request.approved)
                                } else {
                                    td_string!(l, rerun.request.rejected)
                                }} " — " <span data-entered>{d.approver.clone()}</span> " · "
                                {local_time(d.decided_at)}
                                {d
                                    .comment
                                    .clone()
                                    .map(|c| {
                                        view! {
                                            " · "
                                            <span data-entered>{c}</span>
                                        }
                                    })}
                                {d
                                    .no_longer_counts
                                    .then(|| {
                                        view! {
                                            <br />
                                            <span class="badge warn">
                                                {td_string!(l, rerun.request.no_longer_counts)}
                                            </span>
                                        }
                                    })}
                            </li>
                        }
                    })
                    .collect_view()}
            </ul>
        </section>
    }
}
