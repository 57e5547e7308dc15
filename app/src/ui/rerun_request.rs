//! A rerun request: its computed plan and the five checks, each with what the system found and who confirmed
//! it; then the request for approval. Started from the operation's page.
use super::labels::{failure_class_label, jst};
use crate::api::reruns::{
    CancelRerunRequest, CheckView, ConfirmCheck, RequestApproval, RerunRequestView, StartAnswer, StartRerunRequest,
    load_rerun_request,
};
use crate::domain::stall::FailureClass;
use leptos::prelude::*;
use leptos_router::components::A;
use leptos_router::hooks::{use_navigate, use_params_map};

pub fn status_label(status: &str) -> &'static str {
    match status {
        "draft" => "✎ 下書き（チェックリスト確認中）",
        "pending_approval" => "… 承認待ち",
        "approved" => "✓ 承認済み",
        "rejected" => "✕ 却下",
        "expired" => "⌛ 期限切れ",
        "cancelled" => "✕ 取り消し",
        "dispatched" => "↻ 再実行を送信済み",
        "succeeded" => "✓ 再実行成功",
        "failed" => "✕ 再実行失敗",
        _ => "?",
    }
}

/// On a stalled operation's page: start a request, or see why one cannot be made.
#[component]
pub fn StartRerun(process_id: String) -> impl IntoView {
    let start = ServerAction::<StartRerunRequest>::new();
    let navigate = use_navigate();
    Effect::new(move |_| {
        if let Some(Ok(StartAnswer::Created { id })) = start.value().get() {
            navigate(&format!("/reruns/{id}"), Default::default());
        }
    });
    let outcome = move || match start.value().get() {
        Some(Ok(StartAnswer::Blocked { reasons })) => view! {
            <div class="error" role="alert" data-testid="plan-blocked">
                <p>"次のステップのため、再実行を申請できません:"</p>
                <ul>{reasons.into_iter().map(|b| view! { <li><strong>{b.step}</strong> ": " {b.reason}</li> }).collect_view()}</ul>
            </div>
        }
        .into_any(),
        Some(Ok(StartAnswer::NothingToRerun { confirmed })) => view! {
            <p class="ok" role="status">"再実行するステップはありません。外部システムで実行済みのため完了フラグを確定しました: " {confirmed.join("、")}</p>
        }
        .into_any(),
        Some(Err(e)) => view! { <p class="error" role="alert">{e.to_string()}</p> }.into_any(),
        _ => ().into_any(),
    };
    view! {
        <details class="card" open>
            <summary>"再実行を申請する"</summary>
            <p>"再実行の対象は自動で決まります: 完了しておらず、外部システムが「未実行」と証明したステップだけを、元の冪等キーで再実行します。"</p>
            <ActionForm action=start attr:class="form">
                <input type="hidden" name="process_id" value=process_id />
                <label for="rerun-reason">"申請の理由"</label>
                <textarea id="rerun-reason" name="reason" required rows="2"></textarea>
                <button type="submit" disabled=move || start.pending().get()>"再実行の計画を作る"</button>
            </ActionForm>
            {outcome}
        </details>
    }
}

#[component]
pub fn RerunRequestPage() -> impl IntoView {
    let params = use_params_map();
    let confirm = ServerAction::<ConfirmCheck>::new();
    let submit = ServerAction::<RequestApproval>::new();
    let cancel = ServerAction::<CancelRerunRequest>::new();
    let request = Resource::new(
        move || {
            let versions = [confirm.version().get(), submit.version().get(), cancel.version().get()];
            (params.get().get("id").unwrap_or_default(), versions)
        },
        |(id, _)| load_rerun_request(id),
    );
    view! {
        <Suspense fallback=|| view! { <p class="loading">"読み込み中…"</p> }>
            {move || Suspend::new(async move {
                match request.await {
                    Ok(r) => view! { <Request r confirm submit cancel /> }.into_any(),
                    Err(crate::api::AppError::NotFound) => view! { <h1>"見つかりません"</h1> }.into_any(),
                    Err(e) => view! { <p class="error" role="alert">{e.to_string()}</p> }.into_any(),
                }
            })}
        </Suspense>
    }
}

#[component]
fn Request(
    r: RerunRequestView,
    confirm: ServerAction<ConfirmCheck>,
    submit: ServerAction<RequestApproval>,
    cancel: ServerAction<CancelRerunRequest>,
) -> impl IntoView {
    let all_confirmed = r.checks.len() == 5 && r.checks.iter().all(|c| c.confirmed_at.is_some());
    let (id, may_confirm) = (r.id.clone(), r.may_confirm);
    let error_of_confirm = super::error_of(confirm);
    let error_of_submit = super::error_of(submit);
    let error_of_cancel = super::error_of(cancel);
    let may_cancel = r.may_cancel;
    let cancel_id = r.id.clone();
    view! {
        <h1>"再実行の申請 " <code>{r.id.clone()}</code></h1>
        <dl class="facts card">
            <dt>"状態"</dt><dd data-testid="request-status">{status_label(&r.status)}</dd>
            <dt>"オペレーション"</dt><dd><A href=format!("/operations/{}", r.process_id)>{r.process_id.clone()}</A></dd>
            <dt>"申請者"</dt><dd>{r.requester.clone()} " · " {jst(r.created_at)}</dd>
            <dt>"理由"</dt><dd>{r.reason.clone()}</dd>
        </dl>
        <table class="grid" data-testid="plan">
            <caption>"再実行の計画（元の冪等キーのまま）"</caption>
            <thead><tr><th scope="col">"ステップ"</th><th scope="col">"冪等キー"</th></tr></thead>
            <tbody>{r.plan.steps.iter().map(|s| view! {
                <tr><td>{s.name.clone()}</td><td><code>{s.idempotency_key.clone()}</code></td></tr>
            }).collect_view()}</tbody>
        </table>
        <section aria-labelledby="checklist-title">
            <h2 id="checklist-title">"再実行前チェックリスト"</h2>
            <ol class="checklist" data-testid="checklist">
                {r.checks.into_iter().map(|c| view! { <CheckItem c id=id.clone() may_confirm confirm /> }).collect_view()}
            </ol>
            <crate::ui::ErrorNote error=error_of_confirm />
        </section>
        {(!r.decisions.is_empty()).then(|| view! {
            <section aria-labelledby="decisions-title">
                <h2 id="decisions-title">"承認・却下"</h2>
                <ul data-testid="decisions">
                    {r.decisions.iter().map(|d| view! {
                        <li>{if d.decision == "approved" { "✓ 承認" } else { "✕ 却下" }} " — " {d.approver.clone()} " · "
                            {jst(d.decided_at)} {d.comment.clone().map(|c| format!(" · {c}"))}</li>
                    }).collect_view()}
                </ul>
            </section>
        })}
        {(may_confirm && all_confirmed).then(|| view! {
            <ActionForm action=submit attr:class="inline">
                <input type="hidden" name="id" value=id.clone() />
                <button type="submit" disabled=move || submit.pending().get()>"承認を依頼する"</button>
                <crate::ui::ErrorNote error=error_of_submit />
            </ActionForm>
        })}
        {may_cancel.then(|| view! {
            <details class="card">
                <summary>"申請を取り下げる"</summary>
                <ActionForm action=cancel attr:class="form">
                    <input type="hidden" name="id" value=cancel_id />
                    <label for="cancel-reason">"取り下げの理由"</label>
                    <textarea id="cancel-reason" name="reason" required rows="2"></textarea>
                    <crate::ui::ErrorNote error=error_of_cancel />
                    <button type="submit" class="secondary">"取り下げる"</button>
                </ActionForm>
            </details>
        })}
    }
}

#[component]
fn CheckItem(c: CheckView, id: String, may_confirm: bool, confirm: ServerAction<ConfirmCheck>) -> impl IntoView {
    let number = c.number;
    let system = if c.holds { "システムの確認: 満たしている" } else { "✕ システムの確認: 満たしていない" };
    let confirmed = c.confirmed_at.map(|at| {
        let cause = c.cause_class.as_deref().map(|k| format!(" · 原因: {} — {}", failure_class_label(k), c.cause_text.clone().unwrap_or_default()));
        view! {
            <p class="ok" data-testid="confirmed">{c.confirmed_by.clone().unwrap_or_default()} " · " {jst(at)} " · " {c.comment.clone().unwrap_or_default()}{cause}</p>
        }
    });
    let form = (may_confirm && c.confirmed_at.is_none() && c.holds).then(move || {
        let field = move |name: &str| format!("check-{number}-{name}");
        view! {
            <ActionForm action=confirm attr:class="form">
                <input type="hidden" name="id" value=id />
                <input type="hidden" name="number" value=number.to_string() />
                {(number == 5).then(|| view! {
                    <label for=field("cause-class")>"原因の分類"</label>
                    <select id=field("cause-class") name="cause_class">
                        {FailureClass::ALL.into_iter().map(|k| view! { <option value=k.as_str()>{failure_class_label(k.as_str())}</option> }).collect_view()}
                    </select>
                    <label for=field("cause-text")>"原因の内容"</label>
                    <textarea id=field("cause-text") name="cause_text" rows="2" required></textarea>
                })}
                <label for=field("comment")>"確認のコメント"</label>
                <input id=field("comment") name="comment" required />
                <button type="submit">"確認した"</button>
            </ActionForm>
        }
    });
    view! {
        <li data-check=number>
            <strong>{c.label}</strong>
            <p class=if c.holds { "system ok" } else { "system bad" }>{system}</p>
            <p class="evidence">"根拠: " {c.evidence}</p>
            {confirmed}
            {form}
        </li>
    }
}
