//! The decision table as a document: the ten events with what to check and do, on a page and as an `.xlsx`
//! download (filled in, or blank for a team's own rows). The words are the same everywhere the table appears.
use super::help::{GuideSection, Help};
use super::labels::locale;
use crate::domain::stall::StallEvent;
use crate::i18n::td_string;
pub use crate::words::decision_table::*;
use leptos::prelude::*;

#[component]
pub fn DecisionTablePage() -> impl IntoView {
    let l = locale();
    view! {
        <h1>{td_string!(l, operation.decision_table.title)} <Help section=GuideSection::Reconciliation /></h1>
        <p>{td_string!(l, operation.decision_table.intro)}</p>
        <p class="exports">
            <a href="/decision-table.xlsx" download data-testid="decision-table-xlsx">
                {td_string!(l, operation.decision_table.download)}
            </a>
            " · "
            <a href="/decision-table.xlsx?blank=true" download>
                {td_string!(l, operation.decision_table.download_blank)}
            </a>
        </p>
        <table class="grid" data-testid="decision-table">
            <thead>
                <tr>{headings(l).into_iter().map(|h| view! { <th scope="col">{h}</th> }).collect_view()}</tr>
            </thead>
            <tbody>
                {StallEvent::ALL
                    .iter()
                    .map(|event| {
                        let [name, rest @ ..] = row_texts(l, *event);
                        view! {
                            <tr data-event=event.as_str()>
                                <th scope="row">{name}</th>
                                {rest.into_iter().map(|text| view! { <td>{text}</td> }).collect_view()}
                            </tr>
                        }
                    })
                    .collect_view()}
            </tbody>
        </table>
    }
}
