//! The approval inbox of a department's owner: each request with its plan, who asked and why; approve, or
//! reject with a reason. Readable on a phone.
use super::labels::jst;
use crate::api::reruns::{DecideRerun, InboxItem, approval_inbox};
use leptos::prelude::*;
use leptos_router::components::A;

#[component]
pub fn ApprovalsPage() -> impl IntoView {
    let decide = ServerAction::<DecideRerun>::new();
    let inbox = Resource::new(move || decide.version().get(), |_| approval_inbox());
    let error = super::error_of(decide);
    view! {
        <h1>"承認待ちの再実行申請"</h1>
        <crate::ui::ErrorNote error />
        <Suspense fallback=|| view! { <p class="loading">"読み込み中…"</p> }>
            {move || Suspend::new(async move {
                match inbox.await {
                    Ok(items) if items.is_empty() => view! { <p data-testid="inbox-empty">"承認待ちの申請はありません。"</p> }.into_any(),
                    Ok(items) => view! {
                        <ul class="inbox" data-testid="inbox">
                            {items.into_iter().map(|item| view! { <Item item decide /> }).collect_view()}
                        </ul>
                    }.into_any(),
                    Err(e) => view! { <p class="error" role="alert">{e.to_string()}</p> }.into_any(),
                }
            })}
        </Suspense>
    }
}

#[component]
fn Item(item: InboxItem, decide: ServerAction<DecideRerun>) -> impl IntoView {
    let id = item.id.clone();
    let field = format!("reject-{}", item.id);
    let decisions = (!item.own_request).then(|| {
        let (approve_id, reject_id) = (id.clone(), id.clone());
        view! {
            <ActionForm action=decide attr:class="inline">
                <input type="hidden" name="id" value=approve_id />
                <input type="hidden" name="approve" value="true" />
                <input type="hidden" name="comment" value="" />
                <button type="submit" disabled=move || decide.pending().get()>"承認する"</button>
            </ActionForm>
            <ActionForm action=decide attr:class="form">
                <input type="hidden" name="id" value=reject_id />
                <input type="hidden" name="approve" value="false" />
                <label for=field.clone()>"却下する理由"</label>
                <textarea id=field name="comment" rows="2" required></textarea>
                <button type="submit" class="secondary" disabled=move || decide.pending().get()>"却下する"</button>
            </ActionForm>
        }
    });
    view! {
        <li class="card" data-request=item.id.clone()>
            <h2><A href=format!("/reruns/{}", item.id)>{item.process_id.clone()}</A> " · " {item.department.clone()}</h2>
            <p>{item.requester.clone()} {item.submitted_at.map(|at| format!(" · {}", jst(at)))}</p>
            <p>"理由: " {item.reason.clone()}</p>
            <p>"再実行するステップ（元の冪等キー）: "
                {item.steps.iter().map(|(s, k)| format!("{s} ({k})")).collect::<Vec<_>>().join("、")}</p>
            <p>"承認 " {item.approvals} " / " {item.required}</p>
            {item.own_request.then(|| view! { <p class="badge warn">"ご自身の申請は承認できません（別の責任者が判断します）"</p> })}
            {decisions}
        </li>
    }
}
