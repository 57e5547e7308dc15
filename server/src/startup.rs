//! Building and serving the app: database, migrations, sessions, routes, protections.
use crate::http;
use axum::Router;
use axum_login::AuthManagerLayerBuilder;
use backend::auth::{Backend, enforce_timeouts};
use backend::config::Config;
use backend::db::sessions::SqlSessionStore;
use backend::reconciliation::kinds::ConnectorKinds;
use backend::{AppState, Clock, Db, PoolSettings, ServerOptions, SystemClock};
use leptos::prelude::*;
use leptos_axum::{LeptosRoutes, generate_route_list};
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::net::TcpListener;
use tower_sessions::cookie::SameSite;
use tower_sessions::{Expiry, SessionManagerLayer};

/// Leptos' own settings (site root, output name) from cargo-leptos' environment, with our defaults, and where
/// the site's files are wherever the server was copied (`site::locate`).
pub fn leptos_options() -> anyhow::Result<LeptosOptions> {
    let mut options = leptos::config::get_configuration(None)?.leptos_options;
    if options.output_name.is_empty() {
        options.output_name = "rerun-gate".into();
    }
    let site_root_set = std::env::var_os("LEPTOS_SITE_ROOT").is_some();
    crate::site::locate(&mut options, site_root_set, binary_dir().as_deref());
    Ok(options)
}

/// Before serving: every file the pages ask for is in the site folder, or the start stops saying where it looked.
pub fn check_site(options: &LeptosOptions) -> anyhow::Result<()> {
    crate::site::check(options, binary_dir().as_deref())
}

fn binary_dir() -> Option<std::path::PathBuf> {
    Some(std::env::current_exe().ok()?.parent()?.to_path_buf())
}

/// Opens the database named by `url` and brings its schema up to date.
pub async fn open_database(url: &str) -> anyhow::Result<Db> {
    open_database_as(url, None, &Default::default()).await
}

/// `open_database`; with `migrate_url` (PostgreSQL: the owner's, `RERUN_GATE_MIGRATE_URL`) the owner brings
/// the schema up to date and grants the role of `url` its rights, and the app then works as that role, which
/// cannot change the schema nor the audit trail's history.
/// `pools`: the work pool's size and the acquire timeout (the pages' and exports' pools are the state's).
pub async fn open_database_as(url: &str, migrate_url: Option<&str>, pools: &PoolSettings) -> anyhow::Result<Db> {
    let db = Db::connect_with(url, pools).await?;
    match migrate_url {
        Some(owner_url) => {
            let owner = Db::connect(owner_url).await?;
            owner.migrate().await?;
            if let Some(role) = db.role().filter(|role| Some(role) != owner.role().as_ref()) {
                owner.grant_runtime(&role).await?;
            }
            owner.close().await;
        }
        None => db.migrate().await?,
    }
    db.optimize().await?;
    Ok(db)
}

/// Runs `job` every `period` for as long as the process lives.
fn every<F, Fut>(period: std::time::Duration, mut job: F)
where
    F: FnMut() -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ()> + Send,
{
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(period);
        loop {
            tick.tick().await;
            job().await;
        }
    });
}

/// Bulk reruns in stages, every 2 s: a stage that settled is checked at once rather than at the next sweep, so
/// that stages cost the batch little more than their settle time. (The sweeper checks them too.)
pub fn spawn_stage_checks(state: AppState) {
    every(std::time::Duration::from_secs(2), move || {
        let state = state.clone();
        async move {
            if let Err(error) = backend::services::batches::check_stages(&state).await {
                tracing::error!(%error, "checking the stages of bulk reruns failed");
            }
        }
    });
}

/// The sweeper, every `period`: running operations that stalled are marked and classified.
pub fn spawn_sweeper(state: AppState, period: std::time::Duration) {
    every(period, move || {
        let state = state.clone();
        async move {
            if let Err(error) = backend::services::sweeper::sweep(&state).await {
                tracing::error!(%error, "sweep failed");
            }
            // Webhooks stored but not processed (a crash in between) are picked up here.
            if let Err(error) = backend::services::webhooks::process_pending(&state).await {
                tracing::error!(%error, "processing stored webhooks failed");
            }
        }
    });
}

/// The dispatcher: sends approved reruns and chat notifications from their outboxes, woken by approvals and
/// polling every second. Any number of instances may run it. It ends once `state.begin_stopping()` is called
/// and what it claimed is sent and written (see `finish_dispatching`).
pub fn spawn_dispatcher(state: AppState) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        while !state.is_stopping() {
            let handled = backend::services::dispatcher::dispatch_due(&state).await;
            if let Err(error) = &handled {
                tracing::error!(%error, "dispatching failed");
            }
            if let Err(error) = backend::services::notifications::send_outbound(&state).await {
                tracing::error!(%error, "sending chat and e-mail notifications failed");
            }
            if let Err(error) = backend::services::chat::send_posts(&state).await {
                tracing::error!(%error, "sending or updating decision messages in Slack failed");
            }
            if matches!(handled, Ok(n) if n > 0) {
                continue; // more may be due
            }
            // An approval on this instance wakes it at once; the poll finds work from other instances and retries.
            let _ = tokio::time::timeout(std::time::Duration::from_secs(1), state.dispatch_wake.notified()).await;
        }
    })
}

/// At shutdown, after the last request: the dispatcher finishes the reruns it claimed (each bounded by the
/// dispatch timeout) instead of leaving them to wait for its leases to end on another instance.
pub async fn finish_dispatching(state: &AppState, dispatcher: tokio::task::JoinHandle<()>) {
    state.begin_stopping();
    let bound = state.server.dispatch_timeout * 2 + std::time::Duration::from_secs(5);
    match tokio::time::timeout(bound, dispatcher).await {
        Ok(_) => tracing::info!("dispatcher finished its claimed work"),
        Err(_) => {
            tracing::warn!("dispatcher still busy at shutdown: its leases will pass the work to another instance")
        }
    }
}

/// Every few minutes while events arrive, a signed checkpoint of the audit chain (when a key is configured).
pub fn spawn_checkpoints(state: AppState) {
    if backend::services::audit_proof::signer(&state).key().is_none() {
        tracing::warn!(
            "no audit signing key (RERUN_GATE_AUDIT_KEY_FILE): the audit chain's checkpoints are not signed"
        );
        return;
    }
    // The events since the last checkpoint are what whoever runs the database could rewrite unseen.
    let period = std::time::Duration::from_secs(60 * u64::from(state.config.audit.checkpoint_minutes));
    every(period, move || {
        let state = state.clone();
        async move {
            if let Err(error) = backend::services::audit_proof::checkpoint_head(&state).await {
                tracing::error!(%error, "signing an audit checkpoint failed");
            }
            if let Err(error) = backend::services::audit_memory::send_digest_if_due(&state).await {
                tracing::error!(%error, "sending the audit digest failed");
            }
        }
    });
}

/// Every second, the audit trail's Merkle tree is grown to the trail's head (it is grown on demand too, before a
/// proof or a checkpoint: this keeps that short).
pub fn spawn_tree_follower(state: AppState) {
    every(std::time::Duration::from_secs(1), move || {
        let db = state.db.clone();
        async move {
            if let Err(error) = backend::services::audit_tree::follow(&db).await {
                tracing::error!(%error, "growing the audit trail's Merkle tree failed");
            }
        }
    });
}

/// Every minute, the audit chain is checked on from where the last check stopped (the audit page shows what this
/// found, and never checks or writes itself: a page only reads).
pub fn spawn_chain_checks(state: AppState) {
    every(std::time::Duration::from_secs(60), move || {
        let state = state.clone();
        async move {
            if let Err(error) = backend::services::audit_trail::check_chain(&state).await {
                tracing::error!(%error, "checking the audit chain failed");
            }
        }
    });
}

/// Every few seconds, the board's count changes are folded into its counts (PostgreSQL; see
/// `Db::fold_board_counts`), so a board render adds a few changes, not every change since the last fold.
pub fn spawn_board_count_folding(state: AppState) {
    every(std::time::Duration::from_secs(5), move || {
        let state = state.clone();
        async move {
            if let Err(error) = backend::services::board::fold_counts(&state).await {
                tracing::error!(%error, "folding the board's count changes failed");
            }
        }
    });
}

/// Housekeeping every few minutes: expired sessions, idempotency records past their retention window, raw webhook
/// bodies and sent messages past theirs (each purge audited; audit events are never purged). Any instance may run it;
/// the deletions are idempotent.
pub fn spawn_housekeeping(state: AppState) {
    use tower_sessions::session_store::ExpiredDeletion;
    let store = SqlSessionStore::new(&state.db);
    every(std::time::Duration::from_secs(300), move || {
        let (state, store) = (state.clone(), store.clone());
        async move {
            if let Err(error) = store.delete_expired().await {
                tracing::error!(%error, "expired-session cleanup failed");
            }
            if let Err(error) = state.db.optimize().await {
                tracing::error!(%error, "updating the query planner's statistics failed");
            }
            match backend::services::idempotency::purge_expired(&state).await {
                Ok(0) => {}
                Ok(purged) => tracing::info!(purged, "idempotency records past retention purged"),
                Err(error) => tracing::error!(%error, "idempotency purge failed"),
            }
            match backend::services::webhooks::purge_bodies(&state).await {
                Ok(0) => {}
                Ok(purged) => tracing::info!(purged, "raw webhook bodies past retention purged"),
                Err(error) => tracing::error!(%error, "webhook body purge failed"),
            }
            match backend::services::notifications::purge_sent(&state).await {
                Ok(0) => {}
                Ok(purged) => tracing::info!(purged, "sent chat messages and e-mails past retention purged"),
                Err(error) => tracing::error!(%error, "outbound message purge failed"),
            }
        }
    });
}

/// Every minute: this week's and month's indicators against the configured thresholds (owners are told of a
/// crossing once; the unique open crossing per period keeps several instances from telling twice).
pub fn spawn_threshold_checks(state: AppState) {
    if state.config.thresholds.is_empty() {
        return;
    }
    every(std::time::Duration::from_secs(60), move || {
        let state = state.clone();
        async move {
            if let Err(error) = backend::services::reviews::check_thresholds(&state).await {
                tracing::error!(%error, "checking the indicator thresholds failed");
            }
        }
    });
}

/// What the configuration leaves undone, said once at start-up: steps whose connector compares nothing, and
/// connectors whose webhook secret is not set.
pub fn warn_of_gaps(state: &AppState) {
    for (workflow, step, connector) in state.connectors.steps_compared_with_nothing(&state.config) {
        tracing::warn!(
            workflow,
            step,
            connector,
            "a side-effecting step's connector reads no field of the outside \
            system's records: its verdicts can only be \"executed, content not compared\"; give it a `fields` mapping"
        );
    }
    for (connector, variable) in state.connectors.unsigned_webhooks(&state.config) {
        tracing::warn!(connector, variable, "webhook secret variable not set: this connector's webhooks are refused");
    }
}

/// The connector kinds this process knows: the built-in ones, and the demo's, plugged in here at the top.
pub fn connector_kinds() -> ConnectorKinds {
    backend::reconciliation::built_in_kinds().with(backend::demo::connector::DemoKind)
}

/// The configuration file named by `RERUN_GATE_CONFIG` (default `rerun-gate.toml`).
pub fn load_config(path: Option<&std::path::Path>) -> Result<Config, backend::config::ConfigError> {
    let default = backend::config::default_path();
    backend::config::load(path.unwrap_or(&default), &connector_kinds())
}

/// The state, with the departments of the configuration brought into the database.
pub async fn state(db: Db, clock: Arc<dyn Clock>, server: ServerOptions, config: Config) -> anyhow::Result<AppState> {
    let state = AppState::new(db, clock, server, config, &connector_kinds())
        .map_err(|e| anyhow::anyhow!("configuration: {e}"))?;
    backend::services::departments::sync_from_config(&state)
        .await
        .map_err(|e| anyhow::anyhow!("could not bring the departments in line with the configuration: {e}"))?;
    backend::services::operations::report_shared_keys(&state)
        .await
        .map_err(|e| anyhow::anyhow!("could not check the steps' idempotency keys: {e}"))?;
    backend::services::directory::bring_everyone_in_line(&state)
        .await
        .map_err(|e| anyhow::anyhow!("could not bring the directory's people in line with the group mappings: {e}"))?;
    backend::services::api_clients::report_directory_without_sign_in(&state)
        .await
        .map_err(|e| anyhow::anyhow!("could not check the directory's tokens: {e}"))?;
    Ok(state)
}

pub async fn system_state(db: Db, server: ServerOptions, config: Config) -> anyhow::Result<AppState> {
    state(db, Arc::new(SystemClock), server, config).await
}

/// The whole HTTP application: pages, server functions, health checks, and every layer around them.
pub fn router(state: AppState, options: LeptosOptions) -> Router {
    // Generated once per process: generating it renders the app with resource loading switched off for the
    // whole process (leptos-rs/leptos#4773), which would stall a page another router is rendering meanwhile.
    static ROUTES: std::sync::OnceLock<Vec<leptos_axum::AxumRouteListing>> = std::sync::OnceLock::new();
    let routes = ROUTES.get_or_init(|| generate_route_list(app::App)).clone();
    for listing in &routes {
        for method in listing.methods() {
            // Leptos' own method type; its name is the HTTP method's (`Get` → `GET`).
            http::policy::note(&format!("{method:?}").to_uppercase(), listing.path());
        }
    }
    for (path, method) in leptos::server_fn::axum::server_fn_paths() {
        http::policy::note(method.as_str(), path);
    }
    // The browser's side reads through the pages' pool, downloads through the exports'; the machines' side and
    // the background work through the work pool (`AppState::for_pages`).
    let (pages, exports) = (state.for_pages(), state.for_exports());
    let store = SqlSessionStore::new(&pages.db);
    let sessions = SessionManagerLayer::new(store)
        .with_name(state.server.session_cookie_name())
        .with_secure(!state.server.is_local_http())
        .with_http_only(true)
        .with_same_site(SameSite::Lax)
        .with_path("/")
        .with_expiry(Expiry::OnInactivity(tower_sessions::cookie::time::Duration::seconds(
            state.server.idle_timeout.as_secs() as i64,
        )));
    let auth = AuthManagerLayerBuilder::new(Backend::new(pages.clone()), sessions).build();

    let context = {
        let pages = pages.clone();
        move || {
            provide_context(pages.clone());
            provide_context(app::api::ReadOnce::default());
        }
    };
    let leptos = Router::new()
        .leptos_routes_with_context(&options, routes, context.clone(), {
            let options = options.clone();
            move || app::shell(options.clone())
        })
        // The 404 page has the header, which reads the signed-in user: the same context as the pages.
        .fallback(leptos_axum::file_and_error_handler_with_context(context, app::shell))
        .with_state(options.clone());

    // Sessions only for the browser side; the JSON API authenticates every call by its token.
    let browser = leptos
        .merge(crate::audit_export::routes(exports))
        .merge(crate::documents::routes(pages.clone()))
        .merge(crate::guide::routes(&crate::site::stylesheet_href(&options, binary_dir().as_deref())))
        .merge(crate::company_sign_in::routes(pages.clone()))
        .merge(crate::chat::account_routes(pages.clone()))
        .route_layer(axum::middleware::from_fn(http::policy::gate))
        .layer(axum::middleware::from_fn_with_state(pages, enforce_timeouts))
        .layer(auth)
        .layer(http::compress_pages());
    let mut machines = crate::api::routes(state.clone())
        .merge(http::health::routes(state.clone()))
        .merge(http::metrics::routes(state.clone()));
    machines = machines.merge(crate::webhooks::routes(state.clone())).merge(crate::chat::routes(state.clone()));
    machines = machines.merge(crate::scim::routes(state.clone()));
    if state.server.demo_systems {
        machines = machines.merge(crate::demo::routes(state.clone()));
    }
    let machines = machines.route_layer(axum::middleware::from_fn(http::policy::gate));
    // Counted per matched route (static files and unknown paths are not counted); a turn is taken before all.
    let counted = browser
        .merge(machines)
        .route_layer(axum::middleware::from_fn_with_state(state.clone(), http::metrics::count))
        .route_layer(axum::middleware::from_fn_with_state(state.clone(), http::admission::admit));
    http::protect(counted.merge(http::assets::routes(&options)), state)
}

/// Serves until Ctrl-C or SIGTERM, then finishes the requests in flight.
pub async fn serve(listener: TcpListener, router: Router) -> anyhow::Result<()> {
    axum::serve(listener, router.into_make_service_with_connect_info::<SocketAddr>())
        .with_graceful_shutdown(shutdown_signal())
        .await?;
    Ok(())
}

async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        if let Ok(mut signal) = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            signal.recv().await;
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! { _ = ctrl_c => {}, _ = terminate => {} }
    tracing::info!("shutting down");
}
