use crate::api::auth::SignIn;
use crate::domain::identity::is_local_path;
use crate::i18n::td_string;
use leptos::prelude::*;
use leptos_router::hooks::{use_location, use_query_map};

#[component]
pub fn SignInPage() -> impl IntoView {
    let l = super::labels::locale();
    let sign_in = ServerAction::<SignIn>::new();
    let query = use_query_map();
    // The page the server sent the visitor here from (only a path on this site), else the board.
    let next = query.with_untracked(|q| q.get("next")).filter(|p| is_local_path(p));
    // Why the visitor is here: a decision asked for a recent sign-in, or the company sign-in did not work.
    let said = query.with_untracked(|q| match (q.get("problem").as_deref(), q.get("again")) {
        (Some("no_role"), _) => Some(td_string!(l, common.sign_in.no_role).to_string()),
        (Some("access_ended"), _) => Some(td_string!(l, common.sign_in.access_ended).to_string()),
        (Some("auth_time_missing"), _) => Some(td_string!(l, common.sign_in.auth_time_missing).to_string()),
        (Some("not_again"), _) => Some(td_string!(l, common.sign_in.not_again).to_string()),
        (Some("not_strong"), _) => Some(td_string!(l, common.sign_in.not_strong).to_string()),
        (Some(_), _) => Some(td_string!(l, common.sign_in.company_failed).to_string()),
        (None, Some(_)) => Some(td_string!(l, common.error.sign_in_again).to_string()),
        (None, None) => None,
    });
    // Signing in again for a decision: the same person, whose sign-in name the server filled in.
    let again_as = query.with_untracked(|q| q.get("again").and(q.get("username"))).filter(|u| !u.is_empty());
    // The same query (`next`, where to return) goes on to the provider's sign-in.
    let search = use_location().search.get_untracked();
    let company = company_sign_in_offered().then(|| {
        let href = format!("/sign-in/oidc?{search}");
        view! {
            <a class="company-sign-in" href=href rel="external">
                {td_string!(l, common.sign_in.company)}
            </a>
            <p>{td_string!(l, common.sign_in.or_password)}</p>
        }
    });
    // After sign-in, load that page afresh with the new session (or this one, when a session lapsed on it).
    Effect::new(move |_| {
        if let Some(Ok(_)) = sign_in.value().get() {
            let location = window().location();
            match location.pathname().as_deref() {
                Ok("/sign-in") => drop(location.assign(next.as_deref().unwrap_or("/"))),
                _ => drop(location.reload()),
            }
        }
    });
    view! {
        <main class="page narrow" id="main">
            <div class="sign-in-language">
                <super::layout::LanguageSwitch />
            </div>
            <h1>"Rerun Gate"</h1>
            <p class="lead">{td_string!(l, common.sign_in.lead)}</p>
            <crate::ui::ErrorNote error=Signal::stored(said) />
            {company}
            <PasswordForm sign_in again_as />
        </main>
    }
}

/// The sign-in name and password; `again_as`: the person signing in again, whose name is filled in.
#[component]
fn PasswordForm(sign_in: ServerAction<SignIn>, again_as: Option<String>) -> impl IntoView {
    let l = super::labels::locale();
    let error = super::error_of(sign_in);
    let again = again_as.is_some();
    view! {
        <ActionForm action=sign_in attr:class="card form" attr:aria-label=move || td_string!(l, common.sign_in.form)>
            <label for="username">{td_string!(l, common.sign_in.username)}</label>
            <input
                id="username"
                name="username"
                autocomplete="username"
                required
                autofocus=!again
                value=again_as.unwrap_or_default()
            />
            <label for="password">{td_string!(l, common.sign_in.password)}</label>
            <input
                id="password"
                name="password"
                type="password"
                autocomplete="current-password"
                required
                autofocus=again
            />
            <crate::ui::ErrorNote error />
            <button type="submit" disabled=move || sign_in.pending().get()>
                {td_string!(l, common.sign_in.submit)}
            </button>
        </ActionForm>
    }
}

/// Whether the company's identity provider is configured: the server knows, and says so on the page's `<html>`
/// (`ui::shell`), where the browser reads it while hydrating.
fn company_sign_in_offered() -> bool {
    #[cfg(feature = "ssr")]
    return crate::api::auth::company_sign_in_configured();
    #[cfg(not(feature = "ssr"))]
    return document().document_element().is_some_and(|html| html.has_attribute("data-company-sign-in"));
}
