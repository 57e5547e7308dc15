//! One operation: steps with their completion flags next to the reconciliation column, the decision-table
//! row for its event, and its audit timeline.
use super::labels::{event_label, failure_class_label, jst, state_label, verdict_label};
use super::operation_actions::{Actions, AiAttempts, HoldPanel, ManualVerdictForm, ReconcileButton};
use crate::api::board::{OperationDetail, load_operation};
use crate::domain::operations::OperationStatus;
use crate::api::operations::StepView;
use crate::domain::decision_table::row;
use crate::domain::stall::StallEvent;
use leptos::prelude::*;
use leptos_router::components::A;
use leptos_router::hooks::use_params_map;

#[component]
pub fn OperationPage() -> impl IntoView {
    let params = use_params_map();
    let actions = Actions::new();
    // What an action changed shows at once: the page reloads its data after each one.
    let detail = Resource::new(
        move || (params.get().get("process_id").unwrap_or_default(), actions.version()),
        |(process_id, _)| load_operation(process_id),
    );
    view! {
        <Suspense fallback=|| view! { <p class="loading">"読み込み中…"</p> }>
            {move || Suspend::new(async move {
                match detail.await {
                    Ok(detail) => view! { <Detail detail actions /> }.into_any(),
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
fn Detail(detail: OperationDetail, actions: Actions) -> impl IntoView {
    let op = detail.operation;
    let process_id = op.process_id.clone();
    let stalled = op.status == OperationStatus::Stalled;
    let step_names: Vec<String> = op.steps.iter().map(|s| s.name.clone()).collect();
    let attempts: Vec<_> = op
        .steps
        .iter()
        .filter(|s| !s.ai_attempts.is_empty())
        .map(|s| (s.name.clone(), s.ai_attempts.clone()))
        .collect();
    let (may_act, may_record_verdict) = (detail.may_act, detail.may_record_verdict);
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
            <caption>"ステップ — 完了フラグと外部システムの照合結果"</caption>
            <thead><tr>
                <th scope="col">"#"</th><th scope="col">"ステップ"</th><th scope="col">"状態"</th>
                <th scope="col">"完了フラグ"</th><th scope="col">"照合結果（外部システム）"</th>
                <th scope="col">"冪等キー"</th><th scope="col">"結果 ID"</th><th scope="col">"試行"</th><th scope="col">"エラー"</th>
            </tr></thead>
            <tbody>{op.steps.into_iter().map(|s| view! { <StepRow step=s /> }).collect_view()}</tbody>
        </table>
        {attempts.into_iter().map(|(step, attempts)| view! {
            <AiAttempts actions process_id=process_id.clone() step attempts may_act />
        }).collect_view()}
        {may_act.then(|| view! { <ReconcileButton actions process_id=process_id.clone() /> })}
        <HoldPanel actions process_id=process_id.clone() hold=detail.hold stalled may_act />
        {match detail.open_request {
            Some((id, status)) => view! {
                <p class="card" data-testid="open-request">"再実行の申請: "
                    <A href=format!("/reruns/{id}")>{id.clone()}</A> " — " {super::rerun_request::status_label(&status)}</p>
            }.into_any(),
            None if stalled && may_act => view! { <super::rerun_request::StartRerun process_id=process_id.clone() /> }.into_any(),
            None => ().into_any(),
        }}
        {may_record_verdict.then(|| view! { <ManualVerdictForm actions process_id=process_id.clone() steps=step_names /> })}
        {guidance}
        <section aria-labelledby="timeline-title">
            <h2 id="timeline-title">"履歴（監査ログ）"</h2>
            <ol class="timeline" data-testid="timeline">
                {detail.timeline.into_iter().map(|e| view! {
                    // Each piece in its own element: an empty text (a blank reason) next to another would vanish
                    // from the server's HTML, and hydration would then find the wrong node and panic.
                    <li><time>{jst(e.at)}</time> " " <strong>{e.action}</strong> " — " <span>{e.actor}</span>
                        {e.reason.map(|r| view! { <span class="reason">" (" {r} ")"</span> })}</li>
                }).collect_view()}
            </ol>
            <p>
                <a href=format!("/operations/{process_id}/evidence.zip") download data-testid="evidence-bundle">"証跡一式をダウンロード（ZIP）"</a>
                " "
                <A href=format!("/audit?process_id={process_id}")>"監査証跡で見る"</A>
                <span class="hint">" ダウンロードも監査証跡に記録されます。"</span>
            </p>
        </section>
    }
}

#[component]
fn StepRow(step: StepView) -> impl IntoView {
    let verdict = step.latest_verdict;
    let name = step.name.clone();
    let evidence = step.reconciliation.map(|r| {
        let compared = r
            .evidence
            .compared
            .iter()
            .map(|c| {
                let show = |v: &Option<serde_json::Value>| {
                    v.as_ref().map_or("—".to_string(), |v| v.to_string())
                };
                let sign = if c.matches { "=" } else { "≠" };
                format!(
                    "{}: {} {sign} {}",
                    c.name,
                    show(&c.expected),
                    show(&c.found)
                )
            })
            .collect::<Vec<_>>()
            .join("、");
        view! {
            <div class="evidence">
                <span>{r.evidence.summary}</span>
                {r.evidence.external_id.map(|id| view! { <br /> "外部 ID: " <code>{id}</code> })}
                {(!compared.is_empty()).then(|| view! { <br /> "比較: " {compared} })}
                <br /><small>{r.connector} " · " {jst(r.checked_at)} " · " {r.asked_by}</small>
            </div>
        }
    });
    view! {
        <tr data-step=name data-verdict=verdict.map(|v| v.as_str()).unwrap_or("none")>
            <td>{step.position}</td>
            <td>{step.name}</td>
            <td>{state_label(step.state.as_str())}</td>
            <td data-testid="flag">{match step.completed_at { Some(at) => format!("✓ {}", jst(at)), None => "— 未完了".into() }}</td>
            <td data-testid="verdict"><strong class=format!("verdict {}", verdict.map(|v| v.as_str()).unwrap_or("none"))>
                {verdict_label(verdict)}</strong>{evidence}</td>
            <td><code>{step.idempotency_key}</code></td>
            <td>{step.result_id.unwrap_or_else(|| "—".into())}</td>
            <td>{step.attempts}</td>
            <td>{step.error.map(|e| format!("{}: {}", e.class, e.message)).unwrap_or_default()}</td>
        </tr>
    }
}
