//! The decision table as a document: the ten events with what to check and do, on a page and as an `.xlsx`
//! download (filled in, or blank for a team's own rows). The words are the same everywhere the table appears.
use super::labels::{event_label_in, locale};
use crate::domain::decision_table::{Action, row};
use crate::domain::stall::StallEvent;
use crate::i18n::{Locale, td_string};
use leptos::prelude::*;

/// The words of the decision table's row for an event, in the reader's language.
pub struct DecisionTexts {
    pub other_side: &'static str,
    pub next_action: &'static str,
    pub compare: &'static str,
    pub owner_and_cost: &'static str,
}

pub fn decision_texts(l: Locale, event: StallEvent) -> DecisionTexts {
    macro_rules! texts {
        ($event:ident) => {
            DecisionTexts {
                other_side: td_string!(l, operation.decision.$event.other_side),
                next_action: td_string!(l, operation.decision.$event.next_action),
                compare: td_string!(l, operation.decision.$event.compare),
                owner_and_cost: td_string!(l, operation.decision.$event.owner_and_cost),
            }
        };
    }
    match event {
        StallEvent::AuthExpired => texts!(auth_expired),
        StallEvent::RateLimited => texts!(rate_limited),
        StallEvent::TemporaryFailure => texts!(temporary_failure),
        StallEvent::NoResponse => texts!(no_response),
        StallEvent::DuplicateNotification => texts!(duplicate_notification),
        StallEvent::StaleNotification => texts!(stale_notification),
        StallEvent::PartialSuccess => texts!(partial_success),
        StallEvent::AiInProgress => texts!(ai_in_progress),
        StallEvent::CancelRequested => texts!(cancel_requested),
        StallEvent::ResultUnknown => texts!(result_unknown),
    }
}

/// An action of the decision table, in the reader's language.
pub fn action_label(l: Locale, action: Action) -> &'static str {
    match action {
        Action::Reconcile => td_string!(l, operation.action.reconcile),
        Action::RequestRerun => td_string!(l, operation.action.request_rerun),
        Action::ConfirmExisting => td_string!(l, operation.action.confirm_existing),
        Action::Hold => td_string!(l, operation.action.hold),
        Action::Resolve => td_string!(l, operation.action.resolve),
    }
}

/// One row as text, in the table's column order (see `headings`).
pub fn row_texts(l: Locale, event: StallEvent) -> [String; 6] {
    let t = decision_texts(l, event);
    let allowed: Vec<&str> = row(event).allowed.iter().map(|a| action_label(l, *a)).collect();
    [
        event_label_in(l, event.as_str()).to_string(),
        t.other_side.to_string(),
        t.next_action.to_string(),
        t.compare.to_string(),
        t.owner_and_cost.to_string(),
        allowed.join(td_string!(l, operation.list_separator)),
    ]
}

pub fn headings(l: Locale) -> [&'static str; 6] {
    [
        td_string!(l, operation.event),
        td_string!(l, operation.guidance.other_side),
        td_string!(l, operation.guidance.next_action),
        td_string!(l, operation.guidance.compare),
        td_string!(l, operation.guidance.owner_and_cost),
        td_string!(l, operation.decision_table.allowed),
    ]
}

#[component]
pub fn DecisionTablePage() -> impl IntoView {
    let l = locale();
    view! {
        <h1>{td_string!(l, operation.decision_table.title)}</h1>
        <p>{td_string!(l, operation.decision_table.intro)}</p>
        <p class="exports">
            <a href="/decision-table.xlsx" download data-testid="decision-table-xlsx">{td_string!(l, operation.decision_table.download)}</a>
            " · "
            <a href="/decision-table.xlsx?blank=true" download>{td_string!(l, operation.decision_table.download_blank)}</a>
        </p>
        <table class="grid" data-testid="decision-table">
            <thead><tr>{headings(l).into_iter().map(|h| view! { <th scope="col">{h}</th> }).collect_view()}</tr></thead>
            <tbody>
                {StallEvent::ALL.iter().map(|event| {
                    let [name, rest @ ..] = row_texts(l, *event);
                    view! {
                        <tr data-event=event.as_str()>
                            <th scope="row">{name}</th>
                            {rest.into_iter().map(|text| view! { <td>{text}</td> }).collect_view()}
                        </tr>
                    }
                }).collect_view()}
            </tbody>
        </table>
    }
}
