//! One operation: steps with their completion flags next to the reconciliation column, the decision-table
//! row for its event, and its audit timeline.
use super::labels::{event_label, failure_class_label, jst, state_label};
use crate::api::board::{OperationDetail, load_operation};
use crate::domain::decision_table::row;
use crate::domain::stall::StallEvent;
use leptos::prelude::*;
use leptos_router::hooks::use_params_map;

#[component]
pub fn OperationPage() -> impl IntoView {
    let params = use_params_map();
    let detail = Resource::new(move || params.get().get("process_id").unwrap_or_default(), load_operation);
    view! {
        <Suspense fallback=|| view! { <p class="loading">"読み込み中…"</p> }>
            {move || Suspend::new(async move {
                match detail.await {
                    Ok(detail) => view! { <Detail detail /> }.into_any(),
                    Err(crate::api::AppError::NotFound) => view! {
                        <h1>"見つかりません"</h1><p>"このプロセス ID のオペレーションはないか、見る権限がありません。"</p>
                    }.into_any(),
                    Err(e) => view! { <p class="error" role="alert">{e.to_string()}</p> }.into_any(),
                }
            })}
        </Suspense>
    }
}

#[component]
fn Detail(detail: OperationDetail) -> impl IntoView {
    let op = detail.operation;
    let guidance = op.event.as_deref().and_then(StallEvent::parse).map(|event| {
        let r = row(event);
        view! {
            <section class="card guidance" aria-labelledby="guidance-title" data-testid="guidance">
                <h2 id="guidance-title">"判断表: " {event_label(event.as_str())}</h2>
                <dl class="facts">
                    <dt>"相手側の状態"</dt><dd>{r.other_side}</dd>
                    <dt>"次の対応"</dt><dd>{r.next_action}</dd>
                    <dt>"照合する記録"</dt><dd>{r.compare}</dd>
                    <dt>"担当とコスト"</dt><dd>{r.owner_and_cost}</dd>
                </dl>
                <p>"この行で取れる対応: " {r.allowed.iter().map(|a| a.label()).collect::<Vec<_>>().join("、")}</p>
            </section>
        }
    });
    view! {
        <h1>"オペレーション " <code>{op.process_id.clone()}</code></h1>
        <dl class="facts card">
            <dt>"状態"</dt><dd data-testid="operation-status">{state_label(op.status.as_str())}</dd>
            <dt>"ワークフロー"</dt><dd>{op.workflow.clone()}</dd>
            <dt>"部門"</dt><dd>{op.department.clone()}</dd>
            <dt>"イベント"</dt><dd>{op.event.as_deref().map(event_label).unwrap_or("—")}</dd>
            <dt>"障害の種類"</dt><dd>{op.failure_class.as_deref().map(failure_class_label).unwrap_or("—")}</dd>
            <dt>"業務キー"</dt><dd>{op.business_key.clone().unwrap_or_else(|| "—".into())}
                {op.possible_duplicate_of.clone().map(|other| view! { " " <span class="badge off">"重複の可能性: " {other}</span> })}</dd>
            <dt>"登録 (JST)"</dt><dd>{jst(op.created_at)}</dd>
        </dl>
        <table class="grid" data-testid="steps">
            <caption>"ステップ"</caption>
            <thead><tr>
                <th scope="col">"#"</th><th scope="col">"ステップ"</th><th scope="col">"状態"</th>
                <th scope="col">"冪等キー"</th><th scope="col">"結果 ID"</th><th scope="col">"完了フラグ"</th>
                <th scope="col">"試行"</th><th scope="col">"エラー"</th><th scope="col">"照合結果"</th>
            </tr></thead>
            <tbody>
                {op.steps.into_iter().map(|s| view! {
                    <tr>
                        <td>{s.position}</td>
                        <td>{s.name}</td>
                        <td>{state_label(s.state.as_str())}</td>
                        <td><code>{s.idempotency_key}</code></td>
                        <td>{s.result_id.unwrap_or_else(|| "—".into())}</td>
                        <td>{match s.completed_at { Some(at) => format!("✓ {}", jst(at)), None => "— 未完了".into() }}</td>
                        <td>{s.attempts}</td>
                        <td>{s.error.map(|e| format!("{}: {}", e.class, e.message)).unwrap_or_default()}</td>
                        <td>{s.latest_verdict.unwrap_or_else(|| "未照合".into())}</td>
                    </tr>
                }).collect_view()}
            </tbody>
        </table>
        {guidance}
        <section aria-labelledby="timeline-title">
            <h2 id="timeline-title">"履歴（監査ログ）"</h2>
            <ol class="timeline" data-testid="timeline">
                {detail.timeline.into_iter().map(|e| view! {
                    <li><time>{jst(e.at)}</time> " " <strong>{e.action}</strong> " — " {e.actor}
                        {e.reason.map(|r| view! { " (" {r} ")" })}</li>
                }).collect_view()}
            </ol>
        </section>
    }
}
