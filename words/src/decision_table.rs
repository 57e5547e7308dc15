//! The decision table's words: the same on the page and in the `.xlsx` download.
use super::event_label_in;
use crate::i18n::{Locale, td_string};
use domain::decision_table::{Action, row};
use domain::stall::StallEvent;

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
