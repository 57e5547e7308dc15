//! The frame of every signed-in page: loads the current user, sends strangers to the sign-in page.
use super::labels::ReaderZone;
use super::sign_in::SignInPage;
use crate::api::auth::{SignOut, SwitchLanguage, me};
use crate::api::{AppError, CurrentUser};
use crate::domain::preferences::time_zone_or_default;
use crate::domain::roles::Role;
use crate::i18n::{Locale, td_string};
use leptos::prelude::*;
use leptos_router::components::{A, Outlet};

#[component]
pub fn SignedInLayout() -> impl IntoView {
    let l = super::labels::locale();
    let me = Resource::new(|| (), |_| me());
    view! {
        <Suspense fallback=move || view! { <p class="loading">{td_string!(l, common.loading)}</p> }>
            {move || Suspend::new(async move {
                match me.await {
                    Ok(user) => {
                        provide_context(ReaderZone(time_zone_or_default(&user.time_zone)));
                        provide_context(user.clone());
                        view! { <Header user /> <main class="page" id="main"><Outlet /></main> }.into_any()
                    }
                    // Sign in right here, then see the page that was asked for.
                    Err(AppError::Unauthorized) => view! { <SignInPage /> }.into_any(),
                    Err(error) => view! {
                        <main class="page"><p class="error" role="alert">{super::error_message(&error)}</p></main>
                    }.into_any(),
                }
            })}
        </Suspense>
    }
}

#[component]
fn Header(user: CurrentUser) -> impl IntoView {
    let l = super::labels::locale();
    let sign_out = ServerAction::<SignOut>::new();
    Effect::new(move |_| {
        if let Some(Ok(())) = sign_out.value().get() {
            let _ = window().location().assign("/sign-in");
        }
    });
    let departments = user.departments.iter().map(|d| d.name.clone()).collect::<Vec<_>>().join("・");
    let is_admin = user.has(Role::Admin);
    let is_manager = user.has(Role::Manager);
    view! {
        <a href="#main" class="skip-link">{td_string!(l, common.skip_to_content)}</a>
        <header class="topbar">
            <A href="/" attr:class="brand">"Rerun Gate"</A>
            <nav aria-label=move || td_string!(l, common.nav.label)>
                <A href="/">{td_string!(l, common.nav.home)}</A>
                <Show when=move || is_manager>
                    <A href="/approvals">{td_string!(l, common.nav.approvals)}</A>
                </Show>
                <A href="/audit">{td_string!(l, common.nav.audit)}</A>
                <Show when=move || is_admin>
                    <A href="/admin/users">{td_string!(l, common.nav.users)}</A>
                    <A href="/admin/api-clients">{td_string!(l, common.nav.api_clients)}</A>
                    <A href="/admin/configuration">{td_string!(l, common.nav.configuration)}</A>
                </Show>
                <super::notifications::Bell />
                <A href="/account">{td_string!(l, common.nav.account)}</A>
            </nav>
            <div class="who" data-testid="who">
                <span class="name" data-testid="user-name">{user.display_name.clone()}</span>
                <span class="department" data-testid="user-departments">{departments}</span>
                <LanguageSwitch />
                <ActionForm action=sign_out>
                    <button type="submit" class="link">{td_string!(l, common.nav.sign_out)}</button>
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
    let lang = if other == "en" { "en" } else { "ja" };
    view! {
        <ActionForm action=switch attr:class="language-switch">
            <input type="hidden" name="language" value=other />
            <button type="submit" class="link" lang=lang data-testid="language-switch"
                aria-label=move || format!("{}: {name}", td_string!(l, common.language.label))>
                {name}
            </button>
        </ActionForm>
    }
}
