//! Pages and components.
mod admin_system;
mod approvals;
mod audit;
mod download;
mod admin_users;
mod board;
mod labels;
mod layout;
mod notifications;
mod operation;
mod operation_actions;
mod password;
mod rerun_request;
mod sign_in;

use leptos::prelude::*;
use leptos_meta::{MetaTags, Stylesheet, Title, provide_meta_context};
use leptos_router::components::{ParentRoute, Route, Router, Routes};
use leptos_router::path;

/// The HTML document around the app. The nonce comes from the CSP middleware (see server/src/http).
pub fn shell(options: LeptosOptions) -> impl IntoView {
    #[cfg(feature = "ssr")]
    provide_request_nonce();
    view! {
        <!DOCTYPE html>
        <html lang="ja">
            <head>
                <meta charset="utf-8" />
                <meta name="viewport" content="width=device-width, initial-scale=1" />
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
        .and_then(|parts| parts.extensions.get::<CspNonce>().cloned());
    if let Some(CspNonce(value)) = nonce {
        provide_context(leptos::nonce::Nonce::from_value(value));
    }
}

/// The per-response CSP nonce, put into the request by the server's CSP middleware.
#[cfg(feature = "ssr")]
#[derive(Clone, Debug)]
pub struct CspNonce(pub String);

#[component]
pub fn App() -> impl IntoView {
    provide_meta_context();
    // Marks the page once the wasm bundle has taken over (browser tests wait for it).
    Effect::new(|_| {
        if let Some(body) = document().body() {
            let _ = body.set_attribute("data-hydrated", "true");
        }
    });
    view! {
        <Stylesheet id="leptos" href="/pkg/rerun-gate.css" />
        <Title text="Rerun Gate" />
        <Router>
            <Routes fallback=|| view! { <main class="page"><h1>"ページが見つかりません (404)"</h1></main> }>
                <Route path=path!("/sign-in") view=sign_in::SignInPage />
                <ParentRoute path=path!("") view=layout::SignedInLayout>
                    <Route path=path!("/") view=board::BoardPage />
                    <Route path=path!("/operations/:process_id") view=operation::OperationPage />
                    <Route path=path!("/reruns/:id") view=rerun_request::RerunRequestPage />
                    <Route path=path!("/approvals") view=approvals::ApprovalsPage />
                    <Route path=path!("/notifications") view=notifications::NotificationsPage />
                    <Route path=path!("/audit") view=audit::AuditPage />
                    <Route path=path!("/account/password") view=password::PasswordPage />
                    <Route path=path!("/admin/users") view=admin_users::AdminUsersPage />
                    <Route path=path!("/admin/configuration") view=admin_system::ConfigurationPage />
                    <Route path=path!("/admin/api-clients") view=admin_system::ApiClientsPage />
                </ParentRoute>
            </Routes>
        </Router>
    }
}

/// Shows a server function's error in words, or nothing.
/// The message of an action's last failure, if it failed.
pub fn error_of<T>(action: ServerAction<T>) -> Signal<Option<String>>
where
    T: leptos::server_fn::ServerFn<Error = crate::api::AppError> + Clone + Send + Sync + 'static,
    T::Output: Clone + Send + Sync + 'static,
{
    Signal::derive(move || match action.value().get() {
        Some(Err(e)) => Some(e.to_string()),
        _ => None,
    })
}

#[component]
pub fn ErrorNote(#[prop(into)] error: Signal<Option<String>>) -> impl IntoView {
    move || error.get().map(|message| view! { <p class="error" role="alert">{message}</p> })
}
