//! The pages that load their code when the reader goes there: each is a split point of the browser's wasm
//! (`cargo leptos build --split`). The sign-in page, the layout, the board and the approval inbox (where managers
//! land from a notification, often on a phone) stay in the first download. A page's code is fetched when a link
//! to it is approached (pointer, touch or focus), not all at once: a phone downloads what its reader opens.
use leptos::prelude::*;
use leptos_router::{LazyRoute, lazy_route};

/// The lazy pages, each a route whose view is a page component loaded on demand (the page reads its own data).
macro_rules! lazy_pages {
    ($($route:ident => $page:path),+ $(,)?) => {
        $(
            pub struct $route;

            #[lazy_route]
            impl LazyRoute for $route {
                fn data() -> Self {
                    page_code_on_its_way();
                    $route
                }

                fn view(_this: Self) -> AnyView {
                    page_code_arrived();
                    view! { <$page /> }.into_any()
                }
            }
        )+
    };
}

lazy_pages! {
    Operation => super::operation::OperationPage,
    RerunRequest => super::rerun_request::RerunRequestPage,
    Batches => super::batches::BatchesPage,
    Batch => super::batches::BatchPage,
    Notifications => super::notifications::NotificationsPage,
    Incidents => super::incidents::IncidentsPage,
    Incident => super::incidents::IncidentPage,
    Audit => super::audit::AuditPage,
    Reviews => super::reviews::ReviewsPage,
    StopSwitch => super::stop_switch::StopSwitchPage,
    DecisionTable => super::decision_table::DecisionTablePage,
    Account => super::account::AccountPage,
    AdminUsers => super::admin_users::AdminUsersPage,
    Configuration => super::admin_system::ConfigurationPage,
    ApiClients => super::admin_system::ApiClientsPage,
    Drills => super::drills::DrillsPage,
    DrillReport => super::drills::DrillReportPage,
}

thread_local! {
    /// A lazy page's code is on its way: the page is not interactive until it has arrived and hydrated.
    pub(super) static LOADING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// The route matched and its code is being fetched (the browser only: the server renders at once).
fn page_code_on_its_way() {
    if cfg!(feature = "hydrate") {
        LOADING.with(|loading| loading.set(true));
        if let Some(body) = document().body() {
            let _ = body.set_attribute("data-hydrated", "false");
        }
    }
}

/// The page's code is here: it marks the page once it has hydrated.
fn page_code_arrived() {
    if cfg!(feature = "hydrate") {
        LOADING.with(|loading| loading.set(false));
        super::mark_hydrated_soon();
    }
}

/// Listens, once per page load, for the reader approaching a link (the pointer resting on it, a touch, the
/// keyboard's focus) and fetches the code of the page it leads to, so that opening it waits for no code.
pub fn preload_on_approach() {
    use std::sync::atomic::{AtomicBool, Ordering};
    static STARTED: AtomicBool = AtomicBool::new(false);
    if !cfg!(feature = "hydrate") || STARTED.swap(true, Ordering::Relaxed) {
        return;
    }
    let approached = |event: &leptos::web_sys::Event| {
        use leptos::wasm_bindgen::JsCast;
        let target = event.target().and_then(|t| t.dyn_into::<leptos::web_sys::Element>().ok());
        let href = target.and_then(|t| t.closest("a[href]").ok().flatten()).and_then(|a| a.get_attribute("href"));
        if let Some(preload) = href.as_deref().and_then(preload_for) {
            leptos::task::spawn_local(preload);
        }
    };
    // The handles are let go: the listeners stay for the page's life.
    let _ = window_event_listener(leptos::ev::pointerover, move |e| approached(&e));
    let _ = window_event_listener(leptos::ev::focusin, move |e| approached(&e));
}

/// The lazy page a path opens, if any (the routes of `ui::App`).
fn preload_for(path: &str) -> Option<std::pin::Pin<Box<dyn std::future::Future<Output = ()>>>> {
    let path = path.split(['?', '#']).next().unwrap_or_default();
    let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    let future: std::pin::Pin<Box<dyn std::future::Future<Output = ()>>> = match segments.as_slice() {
        ["operations", _] => Box::pin(Operation::preload()),
        ["reruns", _] => Box::pin(RerunRequest::preload()),
        ["batches"] => Box::pin(Batches::preload()),
        ["batches", _] => Box::pin(Batch::preload()),
        ["notifications"] => Box::pin(Notifications::preload()),
        ["incidents"] => Box::pin(Incidents::preload()),
        ["incidents", _] => Box::pin(Incident::preload()),
        ["audit"] => Box::pin(Audit::preload()),
        ["reviews"] => Box::pin(Reviews::preload()),
        ["stop-switch"] => Box::pin(StopSwitch::preload()),
        ["decision-table"] => Box::pin(DecisionTable::preload()),
        ["account"] | ["account", "password"] => Box::pin(Account::preload()),
        ["admin", "users"] => Box::pin(AdminUsers::preload()),
        ["admin", "configuration"] => Box::pin(Configuration::preload()),
        ["admin", "api-clients"] => Box::pin(ApiClients::preload()),
        ["admin", "drills"] => Box::pin(Drills::preload()),
        ["admin", "drills", _] => Box::pin(DrillReport::preload()),
        _ => return None,
    };
    Some(future)
}
