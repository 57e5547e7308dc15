//! The bell (unread count) and the list of notifications.
use super::labels::local_time;
use crate::api::notifications::{MarkNotificationsRead, list_notifications, unread_notifications};
use crate::i18n::{t, t_string, use_i18n};
use leptos::prelude::*;
use leptos_router::components::A;

/// In the header: the unread count, linking to the list.
#[component]
pub fn Bell() -> impl IntoView {
    let i18n = use_i18n();
    let unread = Resource::new(|| (), |_| unread_notifications());
    view! {
        <Suspense fallback=|| ()>
            {move || Suspend::new(async move {
                let n = unread.await.unwrap_or(0);
                let label = if n > 0 {
                    t_string!(i18n, rerun.notifications.bell_unread, count = n).to_string()
                } else {
                    t_string!(i18n, rerun.notifications.bell).to_string()
                };
                let aria = t_string!(i18n, rerun.notifications.bell_label, count = n).to_string();
                view! { <A href="/notifications" attr:data-testid="bell" attr:aria-label=aria>{label}</A> }
            })}
        </Suspense>
    }
}

#[component]
pub fn NotificationsPage() -> impl IntoView {
    let i18n = use_i18n();
    let read = ServerAction::<MarkNotificationsRead>::new();
    let list = Resource::new(move || read.version().get(), |_| list_notifications());
    view! {
        <h1>{t!(i18n, rerun.notifications.title)}</h1>
        <ActionForm action=read attr:class="inline">
            <button type="submit" class="link">{t!(i18n, rerun.notifications.mark_all_read)}</button>
        </ActionForm>
        <Suspense fallback=move || view! { <p class="loading">{t!(i18n, common.loading)}</p> }>
            {move || Suspend::new(async move {
                match list.await {
                    Ok(items) if items.is_empty() => view! { <p>{t!(i18n, rerun.notifications.empty)}</p> }.into_any(),
                    Ok(items) => view! {
                        <ul class="notifications" data-testid="notifications">
                            {items.into_iter().map(|n| view! {
                                <li class=if n.read { "read" } else { "unread" }>
                                    {(!n.read).then(|| view! { <span class="badge warn">{t!(i18n, rerun.notifications.unread)}</span> })}
                                    <A href=n.link>{n.title}</A> " · " <time>{local_time(n.created_at)}</time>
                                </li>
                            }).collect_view()}
                        </ul>
                    }.into_any(),
                    Err(e) => view! { <p class="error" role="alert">{crate::ui::error_message(&e)}</p> }.into_any(),
                }
            })}
        </Suspense>
    }
}
