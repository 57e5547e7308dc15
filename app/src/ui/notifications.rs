//! The bell (unread count) and the list of notifications.
use super::labels::jst;
use crate::api::notifications::{MarkNotificationsRead, list_notifications, unread_notifications};
use leptos::prelude::*;
use leptos_router::components::A;

/// In the header: the unread count, linking to the list.
#[component]
pub fn Bell() -> impl IntoView {
    let unread = Resource::new(|| (), |_| unread_notifications());
    view! {
        <Suspense fallback=|| ()>
            {move || Suspend::new(async move {
                let n = unread.await.unwrap_or(0);
                let label = if n > 0 { format!("🔔 通知 {n}") } else { "🔔 通知".to_string() };
                view! { <A href="/notifications" attr:data-testid="bell" attr:aria-label=format!("通知（未読 {n} 件）")>{label}</A> }
            })}
        </Suspense>
    }
}

#[component]
pub fn NotificationsPage() -> impl IntoView {
    let read = ServerAction::<MarkNotificationsRead>::new();
    let list = Resource::new(move || read.version().get(), |_| list_notifications());
    view! {
        <h1>"通知"</h1>
        <ActionForm action=read attr:class="inline">
            <button type="submit" class="link">"すべて既読にする"</button>
        </ActionForm>
        <Suspense fallback=|| view! { <p class="loading">"読み込み中…"</p> }>
            {move || Suspend::new(async move {
                match list.await {
                    Ok(items) if items.is_empty() => view! { <p>"通知はありません。"</p> }.into_any(),
                    Ok(items) => view! {
                        <ul class="notifications" data-testid="notifications">
                            {items.into_iter().map(|n| view! {
                                <li class=if n.read { "read" } else { "unread" }>
                                    {(!n.read).then(|| view! { <span class="badge warn">"未読"</span> })}
                                    <A href=n.link>{n.title}</A> " · " <time>{jst(n.created_at)}</time>
                                </li>
                            }).collect_view()}
                        </ul>
                    }.into_any(),
                    Err(e) => view! { <p class="error" role="alert">{e.to_string()}</p> }.into_any(),
                }
            })}
        </Suspense>
    }
}
