//! The pages that load their code when the reader goes there: each is a split point of the browser's wasm
//! (`cargo leptos build --split`). The sign-in page, the layout, the board and the approval inbox (where managers
//! land from a notification, often on a phone) stay in the first download.
use leptos::prelude::*;
use leptos_router::{LazyRoute, lazy_route};

/// A route whose view is a page component loaded on demand (the page reads its own data).
macro_rules! lazy_page {
    ($route:ident, $page:path) => {
        pub struct $route;

        #[lazy_route]
        impl LazyRoute for $route {
            fn data() -> Self {
                $route
            }

            fn view(_this: Self) -> AnyView {
                view! { <$page /> }.into_any()
            }
        }
    };
}

lazy_page!(Operation, super::operation::OperationPage);
lazy_page!(RerunRequest, super::rerun_request::RerunRequestPage);
lazy_page!(Batches, super::batches::BatchesPage);
lazy_page!(Batch, super::batches::BatchPage);
lazy_page!(StopSwitch, super::stop_switch::StopSwitchPage);
lazy_page!(Notifications, super::notifications::NotificationsPage);
lazy_page!(Audit, super::audit::AuditPage);
lazy_page!(DecisionTable, super::decision_table::DecisionTablePage);
lazy_page!(Reviews, super::reviews::ReviewsPage);
lazy_page!(Incidents, super::incidents::IncidentsPage);
lazy_page!(Incident, super::incidents::IncidentPage);
lazy_page!(Account, super::account::AccountPage);
lazy_page!(AdminUsers, super::admin_users::AdminUsersPage);
lazy_page!(Configuration, super::admin_system::ConfigurationPage);
lazy_page!(ApiClients, super::admin_system::ApiClientsPage);
lazy_page!(Drills, super::drills::DrillsPage);
lazy_page!(DrillReport, super::drills::DrillReportPage);

/// Once the first page is interactive and the browser is idle, the other pages' code is fetched one page after
/// another (the likeliest next pages first), so that going to one does not wait for its code.
pub fn prefetch_when_idle() {
    request_idle_callback(|| {
        leptos::task::spawn_local(async {
            Operation::preload().await;
            RerunRequest::preload().await;
            Batches::preload().await;
            Batch::preload().await;
            Notifications::preload().await;
            Incidents::preload().await;
            Incident::preload().await;
            Audit::preload().await;
            Reviews::preload().await;
            StopSwitch::preload().await;
            DecisionTable::preload().await;
            Account::preload().await;
            AdminUsers::preload().await;
            Configuration::preload().await;
            ApiClients::preload().await;
            Drills::preload().await;
            DrillReport::preload().await;
        })
    });
}
