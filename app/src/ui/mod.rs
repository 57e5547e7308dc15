//! Pages and components.
mod account;
mod admin_system;
mod admin_users;
mod approvals;
mod audit;
mod audit_proof;
mod audit_values;
mod batch_stages;
mod batches;
mod board;
mod checklist;
mod data;
pub mod decision_table;
mod download;
mod drills;
mod errors;
pub mod help;
mod incidents;
mod known_patterns;
pub mod labels;
mod layout;
mod lazy_pages;
mod names;
mod notifications;
mod operation;
mod operation_actions;
mod rerun_request;
mod reviews;
mod sign_in;
mod steps_table;
mod stop_switch;

use crate::contract::AppError;
use crate::i18n::{I18nContextProvider, Locale, td_string};
pub use errors::{error_in, error_message, field_in};
use leptos::prelude::*;
use leptos_i18n::context::CookieOptions;
use leptos_meta::{HashedStylesheet, MetaTags, Title, provide_meta_context};
use leptos_router::components::{ParentRoute, Route, Router, Routes};
use leptos_router::{Lazy, SsrMode, path};

/// The HTML document around the app. The nonce comes from the CSP middleware (see server/src/http).
pub fn shell(options: LeptosOptions) -> impl IntoView {
    #[cfg(feature = "ssr")]
    provide_request_nonce();
    // Read by the sign-in page in the browser (`sign_in::company_sign_in_offered`).
    #[cfg(feature = "ssr")]
    let company_sign_in = crate::api::auth::company_sign_in_configured().then_some("");
    #[cfg(not(feature = "ssr"))]
    let company_sign_in: Option<&str> = None;
    view! {
        <!DOCTYPE html>
        // `lang` is set by the i18n provider (the reader's language).
        <html data-company-sign-in=company_sign_in>
            <head>
                <meta charset="utf-8" />
                <meta name="viewport" content="width=device-width, initial-scale=1" />
                <HashedStylesheet options=options.clone() id="leptos" />
                <link rel="icon" href="/favicon.svg" type="image/svg+xml" />
                <HydrationScripts options />
                <MetaTags />
            </head>
            <body>
                <App />
            </body>
        </html>
    }
}

/// The nonce the CSP header was sent with, made available to the hydration scripts.
#[cfg(feature = "ssr")]
fn provide_request_nonce() {
    let nonce = use_context::<axum::http::request::Parts>()
        .and_then(|parts| parts.extensions.get::<crate::contract::CspNonce>().cloned());
    if let Some(crate::contract::CspNonce(value)) = nonce {
        provide_context(leptos::nonce::Nonce::from_value(value));
    }
}

/// Marks the page once the wasm bundle has taken over (browser tests wait for `body[data-hydrated]`). Not at
/// once: the parts inside a `Suspense` are hydrated when their data's futures resolve, as microtasks after this
/// effect, and until then their forms have no handlers (a click would submit the form the old way); a timeout
/// runs after every queued microtask. A lazy page's code arrives later still: while it is on its way the mark
/// waits for the page (see `lazy_pages`), which marks itself once hydrated.
fn mark_hydrated_soon() {
    Effect::new(|_| {
        set_timeout(
            || {
                if !lazy_pages::LOADING.with(|loading| loading.get())
                    && let Some(body) = document().body()
                {
                    let _ = body.set_attribute("data-hydrated", "true");
                }
            },
            std::time::Duration::ZERO,
        )
    });
}

#[component]
pub fn App() -> impl IntoView {
    provide_meta_context();
    provide_context(labels::ReaderZone::from_cookie());
    mark_hydrated_soon();
    view! {
        <Title text="Rerun Gate" />
        // The language: the `lang` cookie (set at sign-in from the user's choice, or by the switch), else Japanese;
        // the browser's Accept-Language is not consulted, so that everyone starts in Japanese.
        <I18nContextProvider
            cookie_name=crate::domain::preferences::LANGUAGE_COOKIE
            cookie_options=language_cookie()
            ssr_lang_header_getter=japanese_first()
        >
            <Router>
                <Routes fallback=layout::NotFound>
                    <Route path=path!("/sign-in") view=sign_in::SignInPage />
                    <ParentRoute path=path!("") view=layout::SignedInLayout>
                        // The pages of the first download are sent whole once their data is read (a few milliseconds):
                        // one write, no out-of-order fragments for the browser to move into place. Not the lazy pages:
                        // rendered whole, their forms were not hydrated (their code comes after the page).
                        <Route path=path!("/") view=board::BoardPage ssr=SsrMode::Async />
                        <Route path=path!("/operations/:process_id") view={Lazy::<lazy_pages::Operation>::new()} />
                        <Route path=path!("/reruns/:id") view={Lazy::<lazy_pages::RerunRequest>::new()} />
                        <Route path=path!("/approvals") view=approvals::ApprovalsPage ssr=SsrMode::Async />
                        <Route path=path!("/batches") view={Lazy::<lazy_pages::Batches>::new()} />
                        <Route path=path!("/stop-switch") view={Lazy::<lazy_pages::StopSwitch>::new()} />
                        <Route path=path!("/batches/:id") view={Lazy::<lazy_pages::Batch>::new()} />
                        <Route path=path!("/notifications") view={Lazy::<lazy_pages::Notifications>::new()} />
                        <Route path=path!("/audit") view={Lazy::<lazy_pages::Audit>::new()} />
                        <Route path=path!("/decision-table") view={Lazy::<lazy_pages::DecisionTable>::new()} />
                        <Route path=path!("/reviews") view={Lazy::<lazy_pages::Reviews>::new()} />
                        <Route path=path!("/incidents") view={Lazy::<lazy_pages::Incidents>::new()} />
                        <Route path=path!("/incidents/:id") view={Lazy::<lazy_pages::Incident>::new()} />
                        <Route path=path!("/account") view={Lazy::<lazy_pages::Account>::new()} />
                        <Route path=path!("/account/password") view={Lazy::<lazy_pages::Account>::new()} />
                        <Route path=path!("/admin/users") view={Lazy::<lazy_pages::AdminUsers>::new()} />
                        <Route path=path!("/admin/configuration") view={Lazy::<lazy_pages::Configuration>::new()} />
                        <Route path=path!("/admin/api-clients") view={Lazy::<lazy_pages::ApiClients>::new()} />
                        <Route path=path!("/admin/drills") view={Lazy::<lazy_pages::Drills>::new()} />
                        <Route path=path!("/admin/drills/:id") view={Lazy::<lazy_pages::DrillReport>::new()} />
                    </ParentRoute>
                </Routes>
            </Router>
        </I18nContextProvider>
    }
}

fn language_cookie() -> CookieOptions<Locale> {
    CookieOptions::default().path("/").max_age(400_i64 * 24 * 3600 * 1000).same_site(leptos_use::SameSite::Lax)
}

fn japanese_first() -> leptos_use::UseLocalesOptions {
    leptos_use::UseLocalesOptions::default().ssr_lang_header_getter(|| None)
}

/// A filter form's data without the pair Leptos adds for its nameless submit button (addresses ended in `&=`).
pub fn without_button() -> std::sync::Arc<dyn Fn(&leptos::web_sys::FormData)> {
    std::sync::Arc::new(|data| data.delete(""))
}

/// The message of an action's last failure, if it failed.
pub fn error_of<T>(action: ServerAction<T>) -> Signal<Option<String>>
where
    T: leptos::server_fn::ServerFn<Error = crate::contract::AppError> + Clone + Send + Sync + 'static,
    T::Output: Clone + Send + Sync + 'static,
{
    error_in_words(action, error_in)
}

/// The same, in a page's own words for some refusals (`words`).
pub fn error_in_words<T>(action: ServerAction<T>, words: fn(Locale, &AppError) -> String) -> Signal<Option<String>>
where
    T: leptos::server_fn::ServerFn<Error = crate::contract::AppError> + Clone + Send + Sync + 'static,
    T::Output: Clone + Send + Sync + 'static,
{
    let l = labels::locale();
    Signal::derive(move || match action.value().get() {
        Some(Err(e)) => {
            // A decision that needs a recent sign-in: off to sign in again, and back here afterwards. (Here rather
            // than in an effect of its own, which would cost the first download more.)
            if e == AppError::SignInAgain {
                sign_in_again();
            }
            Some(words(l, &e))
        }
        _ => None,
    })
}

/// Sends the browser to sign in anew (`/sign-in/again`: the provider with `max_age`, or the password); the
/// server brings it back to this page, which the navigation names as its referrer. What the person typed and
/// ticked in the fields marked `data-keep` waits for them there (`restore_kept_fields`).
fn sign_in_again() {
    keep_fields();
    let _ = window().location().assign("/sign-in/again");
}

/// The page's `data-keep` fields (by ID: a text's value, a box's tick), kept in the tab's session storage.
fn keep_fields() {
    #[cfg(feature = "hydrate")]
    {
        let Ok(fields) = document().query_selector_all("[data-keep][id]") else { return };
        let kept = js_sys::Object::new();
        for field in (0..fields.length()).filter_map(|i| fields.item(i)) {
            let id = js_sys::Reflect::get(&field, &"id".into()).unwrap_or_default();
            let checkbox = js_sys::Reflect::get(&field, &"type".into()).ok().and_then(|t| t.as_string());
            let property = if checkbox.as_deref() == Some("checkbox") { "checked" } else { "value" };
            let _ =
                js_sys::Reflect::set(&kept, &id, &js_sys::Reflect::get(&field, &property.into()).unwrap_or_default());
        }
        if let (Ok(Some(storage)), Ok(json)) = (window().session_storage(), js_sys::JSON::stringify(&kept)) {
            let _ = storage.set_item(&kept_key(), &String::from(json));
        }
    }
}

/// Puts back what `keep_fields` kept for this page, once, after a fresh sign-in brought the person back.
pub fn restore_kept_fields() {
    #[cfg(feature = "hydrate")]
    Effect::new(|_| {
        let Ok(Some(storage)) = window().session_storage() else { return };
        let Ok(Some(json)) = storage.get_item(&kept_key()) else { return };
        let _ = storage.remove_item(&kept_key());
        let Ok(kept) = js_sys::JSON::parse(&json) else { return };
        for id in js_sys::Object::keys(&kept.clone().into()).iter() {
            let Some(field) = id.as_string().and_then(|id| document().get_element_by_id(&id)) else { continue };
            let value = js_sys::Reflect::get(&kept, &id).unwrap_or_default();
            let property = if value.as_bool().is_some() { "checked" } else { "value" };
            let _ = js_sys::Reflect::set(&field, &property.into(), &value);
        }
    });
}

#[cfg(feature = "hydrate")]
fn kept_key() -> String {
    format!("kept:{}", window().location().pathname().unwrap_or_default())
}

/// A page's data could not be loaded: why, in words (a lapsed session points to the sign-in page).
#[component]
pub fn PageError(error: AppError) -> impl IntoView {
    let l = labels::locale();
    let sign_in = matches!(error, AppError::Unauthorized).then(|| {
        view! {
            " "
            <a href="/sign-in">{td_string!(l, common.sign_in.submit)}</a>
        }
    });
    view! {
        <p class="error" role="alert">
            {error_in(l, &error)}
            {sign_in}
        </p>
    }
}

#[component]
pub fn ErrorNote(#[prop(into)] error: Signal<Option<String>>) -> impl IntoView {
    move || {
        error.get().map(|message| {
            view! {
                <p class="error" role="alert">
                    {message}
                </p>
            }
        })
    }
}
