//! The bell (unread count) and the list of notifications.
use super::data::resource;
use super::help::{GuideSection, Help};
use super::labels::{local_time, with_entered};
use crate::api::notifications::{MarkNotificationsRead, list_notifications};
use crate::i18n::td_string;
use leptos::prelude::*;
use leptos_router::components::A;

/// In the header: the unread count, linking to the list (read with the user by the layout).
#[component]
pub fn Bell(unread: i64) -> impl IntoView {
    let l = super::labels::locale();
    let label = if unread > 0 {
        td_string!(l, rerun.notifications.bell_unread, count = unread).to_string()
    } else {
        td_string!(l, rerun.notifications.bell).to_string()
    };
    let aria = td_string!(l, rerun.notifications.bell_label, count = unread).to_string();
    view! {
        <A href="/notifications" attr:data-testid="bell" attr:aria-label=aria>
            {label}
        </A>
    }
}

#[component]
pub fn NotificationsPage() -> impl IntoView {
    let l = super::labels::locale();
    let read = ServerAction::<MarkNotificationsRead>::new();
    let list = resource(move || read.version().get(), |_| list_notifications());
    view! {
        <h1>{td_string!(l, rerun.notifications.title)} <Help section=GuideSection::Notifications /></h1>
        <ActionForm action=read attr:class="inline">
            <button type="submit" class="link">
                {td_string!(l, rerun.notifications.mark_all_read)}
            </button>
        </ActionForm>
        <Suspense fallback=move || {
            view! { <p class="loading">{td_string!(l, common.loading)}</p> }
        }>
            {move || Suspend::new(async move {
                match list.await {
                    Ok(items) if items.is_empty() => {
                        view! { <p>{td_string!(l, rerun.notifications.empty)}</p> }.into_any()
                    }
                    Ok(items) => {
                        view! {
                            <ul class="notifications" data-testid="notifications">
                                {items
                                    .into_iter()
                                    .map(|n| {
                                        view! {
                                            <li class=if n.read {
                                                "read"
                                            } else {
                                                "unread"
                                            }>
                                                {(!n.read)
                                                    .then(|| {
                                                        view! {
                                                            <span class="badge warn">
                                                                {td_string!(l, rerun.notifications.unread)}
                                                            </span>
                                                        }
                                                    })}
                                                <A href=n
                                                    .link>
                                                    {with_entered(
                                                        &n.title,
                                                        &n.entered.iter().map(String::as_str).collect::<Vec<_>>(),
                                                    )}
                                                </A> " · " <time>{local_time(n.created_at)}</time>
                                            </li>
                                        }
                                    })
                                    .collect_view()}
                            </ul>
                        }
                            .into_any()
                    }
                    Err(error) => view! { <crate::ui::PageError error /> }.into_any(),
                }
            })}
        </Suspense>
    }
}
