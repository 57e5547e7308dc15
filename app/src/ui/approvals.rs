//! The approval inbox of a department's owner: each request with its plan, who asked and why, and the way to its
//! decision page, where the evidence and the decision are. Readable on a phone.
use super::data::resource;
use super::labels::{local_time, slot, with_entered};
use crate::api::reruns::{InboxItem, approval_inbox};
use crate::i18n::td_string;
use leptos::prelude::*;
use leptos_router::components::A;

#[component]
pub fn ApprovalsPage() -> impl IntoView {
    let l = super::labels::locale();
    let inbox = resource(|| (), |_| approval_inbox());
    view! {
        <h1>{td_string!(l, rerun.approvals.title)}</h1>
        <Suspense fallback=move || view! { <p class="loading">{td_string!(l, common.loading)}</p> }>
            {move || Suspend::new(async move {
                match inbox.await {
                    Ok(items) if items.is_empty() => view! { <p data-testid="inbox-empty">{td_string!(l, rerun.approvals.empty)}</p> }.into_any(),
                    Ok(items) => view! {
                        <ul class="inbox" data-testid="inbox">
                            {items.into_iter().map(|item| view! { <Item item /> }).collect_view()}
                        </ul>
                    }.into_any(),
                    Err(error) => view! { <crate::ui::PageError error /> }.into_any(),
                }
            })}
        </Suspense>
    }
}

/// One request: the facts in a line or two, and the way to its decision page, where the evidence is.
#[component]
fn Item(item: InboxItem) -> impl IntoView {
    let l = super::labels::locale();
    view! {
        <li class="card" data-request=item.id.clone()>
            <h2><A href=format!("/reruns/{}", item.id)>{item.process_id.clone()}</A> " · " {item.department.clone()}</h2>
            <p><span data-entered>{item.requester.clone()}</span> {item.submitted_at.map(|at| format!(" · {}", local_time(at)))}</p>
            <p>{with_entered(&td_string!(l, rerun.approvals.reason, reason = slot(0)).to_string(), &[&item.reason])}</p>
            <p>{td_string!(l, rerun.approvals.steps,
                steps = item.steps.iter().map(|(s, k)| format!("{s} ({k})")).collect::<Vec<_>>().join(td_string!(l, rerun.separator))).to_string()}</p>
            <p>{td_string!(l, rerun.approvals.count, approvals = item.approvals, required = item.required).to_string()}</p>
            {item.own_request.then(|| view! { <p class="badge warn">{td_string!(l, rerun.approvals.own_request)}</p> })}
            {(!item.own_request).then(|| view! {
                <A href=format!("/reruns/{}", item.id) attr:class="button" attr:data-testid="open-decision">{td_string!(l, rerun.approvals.open)}</A>
            })}
        </li>
    }
}
