//! The pages that load their code when the reader goes there: each is a split point of the browser's wasm
//! (`cargo leptos build --split`). The sign-in page, the layout, the board and the approval inbox (where managers
//! land from a notification, often on a phone) stay in the first download.
use leptos::prelude::*;
use leptos_router::{LazyRoute, lazy_route};

/// The lazy pages, each a route whose view is a page component loaded on demand (the page reads its own data),
/// in the order their code is prefetched: the likeliest next pages first.
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

        /// Fetches every lazy page's code, one page after another.
        async fn preload_all() {
            $($route::preload().await;)+
        }
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

/// Once a signed-in page is interactive and the browser is idle, the other pages' code is fetched (once per
/// page load), so that going to one does not wait for its code. Not on the sign-in page: a signed-out phone
/// would download every page for nothing.
pub fn prefetch_when_idle() {
    use std::sync::atomic::{AtomicBool, Ordering};
    static STARTED: AtomicBool = AtomicBool::new(false);
    if STARTED.swap(true, Ordering::Relaxed) {
        return;
    }
    request_idle_callback(|| {
        leptos::task::spawn_local(async {
            preload_all().await;
            // Browser tests wait for it before they count what a later visit downloads again.
            if let Some(body) = document().body() {
                let _ = body.set_attribute("data-prefetched", "true");
            }
        })
    });
}
