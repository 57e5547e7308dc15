//! The approval inbox of a department's owner: each request with its plan, who asked and why; approve, or
//! reject with a reason. Readable on a phone.
use super::data::resource;
use super::labels::{local_time, slot, with_entered};
use crate::api::reruns::{DecideRerun, InboxItem, approval_inbox};
use crate::i18n::td_string;
use leptos::prelude::*;
use leptos_router::components::A;

#[component]
pub fn ApprovalsPage() -> impl IntoView {
    let l = super::labels::locale();
    let decide = ServerAction::<DecideRerun>::new();
    let inbox = resource(move || decide.version().get(), |_| approval_inbox());
    let error = super::error_of(decide);
    view! {
        <h1>{td_string!(l, rerun.approvals.title)}</h1>
        <crate::ui::ErrorNote error />
        <Suspense fallback=move || view! { <p class="loading">{td_string!(l, common.loading)}</p> }>
            {move || Suspend::new(async move {
                match inbox.await {
                    Ok(items) if items.is_empty() => view! { <p data-testid="inbox-empty">{td_string!(l, rerun.approvals.empty)}</p> }.into_any(),
                    Ok(items) => view! {
                        <ul class="inbox" data-testid="inbox">
                            {items.into_iter().map(|item| view! { <Item item decide /> }).collect_view()}
                        </ul>
                    }.into_any(),
                    Err(error) => view! { <crate::ui::PageError error /> }.into_any(),
                }
            })}
        </Suspense>
    }
}

#[component]
fn Item(item: InboxItem, decide: ServerAction<DecideRerun>) -> impl IntoView {
    let l = super::labels::locale();
    let id = item.id.clone();
    let field = format!("reject-{}", item.id);
    let decisions = (!item.own_request).then(|| {
        let (approve_id, reject_id) = (id.clone(), id.clone());
        view! {
            <ActionForm action=decide attr:class="inline">
                <input type="hidden" name="id" value=approve_id />
                <input type="hidden" name="approve" value="true" />
                <input type="hidden" name="comment" value="" />
                <button type="submit" disabled=move || decide.pending().get()>{td_string!(l, rerun.approvals.approve)}</button>
            </ActionForm>
            <ActionForm action=decide attr:class="form">
                <input type="hidden" name="id" value=reject_id />
                <input type="hidden" name="approve" value="false" />
                <label for=field.clone()>{td_string!(l, rerun.approvals.reject_reason)}</label>
                <textarea id=field name="comment" rows="2" required></textarea>
                <button type="submit" class="secondary" disabled=move || decide.pending().get()>{td_string!(l, rerun.approvals.reject)}</button>
            </ActionForm>
        }
    });
    view! {
        <li class="card" data-request=item.id.clone()>
            <h2><A href=format!("/reruns/{}", item.id)>{item.process_id.clone()}</A> " · " {item.department.clone()}</h2>
            <p><span data-entered>{item.requester.clone()}</span> {item.submitted_at.map(|at| format!(" · {}", local_time(at)))}</p>
            <p>{with_entered(&td_string!(l, rerun.approvals.reason, reason = slot(0)).to_string(), &[&item.reason])}</p>
            <p>{td_string!(l, rerun.approvals.steps,
                steps = item.steps.iter().map(|(s, k)| format!("{s} ({k})")).collect::<Vec<_>>().join(td_string!(l, rerun.separator))).to_string()}</p>
            <p>{td_string!(l, rerun.approvals.count, approvals = item.approvals, required = item.required).to_string()}</p>
            {item.own_request.then(|| view! { <p class="badge warn">{td_string!(l, rerun.approvals.own_request)}</p> })}
            {decisions}
        </li>
    }
}
