//! Admin: the loaded configuration (read-only) and the API clients (revocable).
use super::labels::jst;
use crate::api::admin::{RevokeApiClient, list_api_clients, loaded_configuration};
use leptos::prelude::*;

#[component]
pub fn ConfigurationPage() -> impl IntoView {
    let config = Resource::new(|| (), |_| loaded_configuration());
    view! {
        <h1>"設定（読み取り専用）"</h1>
        <Suspense fallback=|| view! { <p class="loading">"読み込み中…"</p> }>
            {move || Suspend::new(async move {
                match config.await {
                    Err(e) => view! { <p class="error" role="alert">{e.to_string()}</p> }.into_any(),
                    Ok(c) => view! {
                        <p>"ファイル: " <code>{c.source.clone()}</code> " ・ 冪等キーの保持: " {c.idempotency_retention_days} " 日"</p>
                        <section class="card" data-testid="config-workflows">
                            <h2>"ワークフロー"</h2>
                            {c.workflows.into_iter().map(|w| view! {
                                <h3>{w.name.clone()} " " <small>"(" {w.department.clone()} ", 版 " <code>{w.version.clone()}</code> ")"</small></h3>
                                <p>"再実行の送り先: " <code>{w.rerun_url.clone()}</code> " ・ 署名鍵の環境変数: " <code>{w.signing_secret_env.clone()}</code>
                                   " ・ 必要な承認: " {w.approvals_required}</p>
                                <ol>
                                    {w.steps.into_iter().map(|s| view! {
                                        <li><strong>{s.name}</strong> " — " {s.connector.unwrap_or_else(|| "—".into())}
                                            {if s.side_effect { " ・ 外部に作用する" } else { " ・ 作用なし" }}
                                            " ・ 期限 " {s.deadline_seconds} " 秒"
                                            {s.heartbeat_seconds.map(|h| format!(" ・ ハートビート {h} 秒"))}</li>
                                    }).collect_view()}
                                </ol>
                            }).collect_view()}
                        </section>
                        <section class="card">
                            <h2>"接続先"</h2>
                            <table class="grid">
                                <thead><tr><th scope="col">"名前"</th><th scope="col">"種類"</th><th scope="col">"設定"</th><th scope="col">"認証情報の環境変数"</th></tr></thead>
                                <tbody>
                                    {c.connectors.into_iter().map(|k| view! {
                                        <tr><td>{k.name}</td><td>{k.kind}</td>
                                            <td>{k.settings.iter().map(|(key, v)| format!("{key} = {v}")).collect::<Vec<_>>().join(", ")}</td>
                                            <td>{k.credential_envs.values().cloned().collect::<Vec<_>>().join(", ")}</td></tr>
                                    }).collect_view()}
                                </tbody>
                            </table>
                        </section>
                        <section class="card">
                            <h2>"部門"</h2>
                            <ul>{c.departments.into_iter().map(|d| view! { <li>{d.name} " (" <code>{d.code}</code> ")"</li> }).collect_view()}</ul>
                        </section>
                    }.into_any(),
                }
            })}
        </Suspense>
    }
}

#[component]
pub fn ApiClientsPage() -> impl IntoView {
    let revoke = ServerAction::<RevokeApiClient>::new();
    let clients = Resource::new(move || revoke.version().get(), |_| list_api_clients());
    let error = super::error_of(revoke);
    view! {
        <h1>"API クライアント"</h1>
        <p>"トークンは作成時に一度だけ表示されます: " <code>"server token create --name 名前 --department 部門"</code></p>
        <crate::ui::ErrorNote error />
        <Suspense fallback=|| view! { <p class="loading">"読み込み中…"</p> }>
            {move || Suspend::new(async move {
                match clients.await {
                    Err(e) => view! { <p class="error" role="alert">{e.to_string()}</p> }.into_any(),
                    Ok(list) => view! {
                        <table class="grid" data-testid="api-clients">
                            <thead><tr><th scope="col">"名前"</th><th scope="col">"部門"</th><th scope="col">"作成 (JST)"</th><th scope="col">"状態"</th></tr></thead>
                            <tbody>
                                {list.into_iter().map(|c| {
                                    let id = c.id;
                                    view! {
                                        <tr><td>{c.name}</td><td>{c.departments.join(", ")}</td><td>{jst(c.created_at)}</td>
                                            <td>{if c.revoked {
                                                view! { <span class="badge off">"✕ 失効"</span> }.into_any()
                                            } else {
                                                view! {
                                                    <span class="badge on">"✓ 有効"</span>
                                                    <button class="small" on:click=move |_| { revoke.dispatch(RevokeApiClient { id }); }>"失効させる"</button>
                                                }.into_any()
                                            }}</td></tr>
                                    }
                                }).collect_view()}
                            </tbody>
                        </table>
                    }.into_any(),
                }
            })}
        </Suspense>
    }
}
