//! The state every handler and server function reaches (`AppState`): what the backend itself needs. What the
//! services keep between calls is on the state's shelf (`kept`), of the services' own types.
use crate::clock::Clock;
use crate::db::Db;
use crate::db::pools::PoolKind;
use crate::kept::Kept;
use crate::options::ServerOptions;
use crate::turns::Turns;
use crate::{config, metrics, oidc, passwords, reconciliation, slack, teams};
use std::sync::Arc;

/// What every handler and server function can reach. Cloned for every request and middleware, so it is one
/// shared pointer (one atomic increment) rather than a dozen.
#[derive(Clone)]
pub struct AppState(Arc<Parts>);

impl std::ops::Deref for AppState {
    type Target = Parts;
    fn deref(&self) -> &Parts {
        &self.0
    }
}

#[derive(Clone)]
pub struct Parts {
    pub db: Db,
    pub clock: Arc<dyn Clock>,
    pub server: Arc<ServerOptions>,
    pub config: Arc<config::Config>,
    /// How reconciliation reaches each outside system, by connector name.
    pub connectors: Arc<reconciliation::Connectors>,
    /// Rung when an approval puts a rerun in the outbox, so this instance's dispatcher sends it at once
    /// instead of at its next poll (other instances still find it by polling).
    pub dispatch_wake: Arc<tokio::sync::Notify>,
    /// Set when the process is shutting down: the dispatcher finishes what it claimed and claims no more.
    pub stopping: Arc<std::sync::atomic::AtomicBool>,
    /// HTTP requests seen by this instance, for `/metrics`.
    pub metrics: Arc<metrics::HttpMetrics>,
    /// Turns for the Argon2 checks of sign-ins and password changes (bounded memory under a flood).
    pub password_checks: Arc<Turns>,
    /// Turns for each kind of request (`options::Admission`): beyond them, 503 at once.
    pub admission: Arc<Admission>,
    /// The database through each pool: the work pool's (`db` of the process's own state), the pages' and the
    /// exports' (`for_pages`, `for_exports`).
    pools: Arc<Pools>,
    /// The company's identity provider (`[sign_in.oidc]`), its discovery and keys cached.
    pub oidc: Option<Arc<oidc::Provider>>,
    /// The Slack app (`[chat.slack]`), and Sign in with Slack for linking accounts.
    pub slack: Option<Arc<slack::Slack>>,
    pub slack_sign_in: Option<Arc<oidc::Provider>>,
    /// The Teams bot (`[chat.teams]`), its Bot Framework keys cached.
    pub teams: Option<Arc<teams::Teams>>,
    /// What the services keep between calls: the API tokens checked lately and each client's rate, the steps
    /// this instance changed last, the audit signer (one per process: it remembers how far it checked the chain).
    pub kept: Arc<Kept>,
}

/// The turns of each kind of request.
pub struct Admission {
    pub pages: Turns,
    pub calls: Turns,
    pub api: Turns,
    pub exports: Turns,
}

struct Pools {
    work: Db,
    pages: Db,
    exports: Db,
}

impl AppState {
    /// The state the pages, their server functions and the browser's session read through: the pages' own pool,
    /// so that browsing never takes a connection the ingestion API, the dispatcher or the sweeper need.
    pub fn for_pages(&self) -> AppState {
        self.with_db(self.pools.pages.clone())
    }

    /// The state downloads stream through: the exports' own pool, a connection for each export that runs.
    pub fn for_exports(&self) -> AppState {
        self.with_db(self.pools.exports.clone())
    }

    fn with_db(&self, db: Db) -> AppState {
        AppState(Arc::new(Parts { db, ..(*self.0).clone() }))
    }

    /// Every pool, whichever of them this state reads through: the work pool's, the pages', the exports'.
    pub fn pools(&self) -> [&Db; 3] {
        [&self.pools.work, &self.pools.pages, &self.pools.exports]
    }

    /// Closes every pool (a file about to be replaced must have no connection left open on it).
    pub async fn close(&self) {
        for db in self.pools() {
            db.close().await;
        }
    }

    /// The dispatcher stops claiming work (it finishes what it holds); see `stopping`.
    pub fn begin_stopping(&self) {
        self.stopping.store(true, std::sync::atomic::Ordering::SeqCst);
        self.dispatch_wake.notify_waiters();
    }

    pub fn is_stopping(&self) -> bool {
        self.stopping.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Fails only when a connector cannot be built from the configuration; `kinds` are the connector kinds the
    /// process knows (the ones the configuration was loaded with).
    pub fn new(
        db: Db,
        clock: Arc<dyn Clock>,
        server: ServerOptions,
        config: config::Config,
        kinds: &reconciliation::kinds::ConnectorKinds,
    ) -> Result<Self, String> {
        let connectors = reconciliation::Connectors::build(&config, kinds, &db, &clock)?;
        let password_checks = Arc::new(passwords::checks(server.password_checks_at_once, server.password_check_queue));
        let admission = Arc::new(Admission {
            pages: Turns::new(server.admission.pages),
            calls: Turns::new(server.admission.calls),
            api: Turns::new(server.admission.api),
            exports: Turns::new(server.admission.exports),
        });
        let pools = Arc::new(Pools {
            pages: db.sibling(PoolKind::Pages, &server.pools),
            exports: db.sibling(PoolKind::Exports, &server.pools),
            work: db.clone(),
        });
        let public_url = &server.public_url;
        let oidc = config
            .sign_in
            .oidc
            .as_ref()
            .map(|c| identity_provider(c, public_url, oidc::SIGN_IN_CALLBACK))
            .transpose()?;
        let slack = config.slack.as_ref().map(slack::Slack::new).transpose()?.map(Arc::new);
        let teams = config.teams.as_ref().map(teams::Teams::new).transpose()?.map(Arc::new);
        let slack_sign_in = config
            .slack
            .as_ref()
            .map(|c| identity_provider(&c.oidc(), public_url, oidc::SLACK_LINK_CALLBACK))
            .transpose()?;
        Ok(AppState(Arc::new(Parts {
            db,
            clock,
            server: Arc::new(server),
            config: Arc::new(config),
            connectors: Arc::new(connectors),
            dispatch_wake: Arc::default(),
            stopping: Arc::default(),
            metrics: Arc::default(),
            password_checks,
            admission,
            pools,
            oidc,
            slack,
            slack_sign_in,
            teams,
            kept: Arc::default(),
        })))
    }

    /// The same state reading another clock (the demo cases play a past hour).
    pub fn with_clock(&self, clock: Arc<dyn Clock>) -> AppState {
        AppState(Arc::new(Parts { clock, ..(*self.0).clone() }))
    }
}

/// An OpenID Connect client coming back to `callback`; its secret comes from the variable the configuration names.
fn identity_provider(
    config: &domain::configuration::OidcConfig,
    public_url: &str,
    callback: &str,
) -> Result<Arc<oidc::Provider>, String> {
    let secret = match &config.client_secret_env {
        Some(var) => Some(
            std::env::var(var)
                .ok()
                .filter(|v| !v.is_empty())
                .ok_or_else(|| format!("client_secret_env: the variable {var} is not set"))?,
        ),
        None => None,
    };
    oidc::Provider::with_callback(config.clone(), secret, &format!("{public_url}{callback}")).map(Arc::new)
}
