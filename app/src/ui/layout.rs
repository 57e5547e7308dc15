//! The frame of every signed-in page: the header with the signed-in user, and beside it the page. Strangers never get
//! here: the server sends them to the sign-in page first (the policy gate, `backend::auth::send_to_sign_in`).
use super::data::resource;
use crate::api::auth::{SignOut, SwitchLanguage, me};
use crate::api::notifications::unread_notifications;
use crate::contract::CurrentUser;
use crate::domain::roles::Role;
use crate::i18n::{Locale, td_string};
use leptos::prelude::*;
use leptos_router::components::{A, Outlet};

#[component]
pub fn SignedInLayout() -> impl IntoView {
    view! {
        <Frame>
            <Outlet />
        </Frame>
    }
}

/// A path no page answers: the header stays, with a way back to the board (the server answers 404).
#[component]
pub fn NotFound() -> impl IntoView {
    let l = super::labels::locale();
    view! {
        <Frame>
            <h1 data-testid="not-found">{td_string!(l, common.not_found)}</h1>
            <p>
                <A href="/">{td_string!(l, common.back_to_board)}</A>
            </p>
        </Frame>
    }
}

#[component]
fn Frame(children: Children) -> impl IntoView {
    let l = super::labels::locale();
    let me = resource(|| (), |_| me());
    let unread = resource(|| (), |_| unread_notifications());
    Effect::new(|_| super::lazy_pages::preload_on_approach());
    // Only the header waits for the user and the unread count; the page beside it is built once per response.
    // Leptos renders a `Suspense`'s content several times on the server: this one holds no `Suspense` or
    // resource of its own, so however often it is rendered, the page's hydration ids stay the same.
    view! {
        <a href="#main" class="skip-link">
            {td_string!(l, common.skip_to_content)}
        </a>
        <Suspense fallback=|| {
            view! {
                <header class="topbar">
                    <span class="brand">"Rerun Gate"</span>
                </header>
            }
        }>
            {move || Suspend::new(async move {
                match me.await {
                    Ok(user) => {
                        let unread = unread.await.unwrap_or(0);
                        view! { <Header user unread /> }.into_any()
                    }
                    Err(error) => {
                        // A session that lapsed while the page was open: the header offers to sign in again.
                        view! {
                            <header class="topbar">
                                <crate::ui::PageError error />
                            </header>
                        }
                            .into_any()
                    }
                }
            })}
        </Suspense>
        <main class="page" id="main">
            {children()}
        </main>
    }
}

#[component]
fn Header(user: CurrentUser, unread: i64) -> impl IntoView {
    let l = super::labels::locale();
    let sign_out = ServerAction::<SignOut>::new();
    Effect::new(move |_| {
        if let Some(Ok(then)) = sign_out.value().get() {
            let _ = window().location().assign(then.as_deref().unwrap_or("/sign-in"));
        }
    });
    let departments = user
        .departments
        .iter()
        .map(|d| d.name_for(l == Locale::en))
        .collect::<Vec<_>>()
        .join(td_string!(l, common.list));
    let is_admin = user.has(Role::Admin);
    let is_manager = user.has(Role::Manager);
    let reruns = is_manager || user.has(Role::Staff);
    view! {
        <header class="topbar">
            <A href="/" attr:class="brand">
                "Rerun Gate"
            </A>
            // Always in sight, on a phone too: the bell and the other language.
            <div class="quick">
                <super::notifications::Bell unread />
                <LanguageSwitch />
            </div>
            // On a phone the rest is a menu that says it is one (a checkbox: it works before the page is live).
            <input type="checkbox" id="nav-toggle" class="nav-toggle" aria-controls="main-nav" />
            <label for="nav-toggle" class="nav-button" data-testid="nav-button">
                "☰ "
                {td_string!(l, common.nav.menu)}
            </label>
            <nav id="main-nav" aria-label=move || td_string!(l, common.nav.label)>
                <A href="/">{td_string!(l, common.nav.home)}</A>
                <Show when=move || reruns>
                    <A href="/approvals">{td_string!(l, common.nav.approvals)}</A>
                    <A href="/batches">{td_string!(l, common.nav.batches)}</A>
                </Show>
                <Show when=move || is_manager || is_admin>
                    <A href="/stop-switch">{td_string!(l, common.nav.stop_switch)}</A>
                </Show>
                <A href="/reviews">{td_string!(l, common.nav.reviews)}</A>
                <A href="/incidents">{td_string!(l, common.nav.incidents)}</A>
                <A href="/audit">{td_string!(l, common.nav.audit)}</A>
                <A href="/decision-table">{td_string!(l, common.nav.decision_table)}</A>
                <Show when=move || is_admin>
                    <A href="/admin/users">{td_string!(l, common.nav.users)}</A>
                    <A href="/admin/api-clients">{td_string!(l, common.nav.api_clients)}</A>
                    <A href="/admin/configuration">{td_string!(l, common.nav.configuration)}</A>
                    <A href="/admin/drills">{td_string!(l, common.nav.drills)}</A>
                </Show>
                <A href="/account">{td_string!(l, common.nav.account)}</A>
            </nav>
            <div class="who" data-testid="who">
                <span class="name" data-testid="user-name" data-entered>
                    {user.display_name.clone()}
                </span>
                <span class="department" data-testid="user-departments" data-entered>
                    {departments}
                </span>
                <ActionForm action=sign_out>
                    <button type="submit" class="link">
                        {td_string!(l, common.nav.sign_out)}
                    </button>
                </ActionForm>
            </div>
        </header>
    }
}

/// Offers the other language; the page reloads in it (the choice is kept in a cookie and, when signed in, in
/// the account).
#[component]
pub fn LanguageSwitch() -> impl IntoView {
    let l = super::labels::locale();
    let switch = ServerAction::<SwitchLanguage>::new();
    Effect::new(move |_| {
        if let Some(Ok(())) = switch.value().get() {
            let _ = window().location().reload();
        }
    });
    let (other, name) = match l {
        Locale::ja => ("en", td_string!(l, common.language.en)),
        Locale::en => ("ja", td_string!(l, common.language.ja)),
    };
    let label = format!("{}: {name}", td_string!(l, common.language.label));
    view! {
        <ActionForm action=switch attr:class="language-switch">
            <input type="hidden" name="language" value=other />
            <button type="submit" class="link" lang=other data-testid="language-switch" aria-label=label>
                {name}
            </button>
        </ActionForm>
    }
}
