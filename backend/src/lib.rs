//! Server-side only: state, sign-in, services (rules + one transaction each) and the data layer.
pub mod audit_key;
pub mod audit_witness;
pub mod auth;
pub mod charts;
pub mod clock;
pub mod config;
pub mod db;
pub mod demo;
pub mod mail;
pub mod metrics;
pub mod oidc;
pub mod passwords;
pub mod reconciliation;
pub mod services;
pub mod slack;
pub mod teams;
pub mod timestamps;
pub mod xlsx;

use std::sync::Arc;
use std::time::Duration;

pub use clock::{Clock, ManualClock, SystemClock};
pub use db::Db;

/// The server process's options, read at start-up from the environment and the command line. (The
/// configuration, `Config`, is what `rerun-gate.toml` says; its `[settings]` table is one part of it.)
#[derive(Clone, Debug)]
pub struct ServerOptions {
    /// The origin browsers use, e.g. `https://rerun-gate.example.co.jp`; checked against `Origin`.
    pub public_url: String,
    /// Sign-out after this long without a request.
    pub idle_timeout: Duration,
    /// Sign-out this long after sign-in, whatever happens.
    pub absolute_timeout: Duration,
    /// Serve the demo outside systems under `/demo/` (`serve --demo`, loopback only).
    pub demo_systems: bool,
    /// A request not answered within this long gets 408 (a client that sends its body slowly included).
    pub request_timeout: Duration,
    /// A rerun receiver that has not answered within this long may have acted: an unknown outcome.
    pub dispatch_timeout: Duration,
    /// A dispatcher's claim on a dispatch lasts this long; a crashed one's claim then passes to another.
    pub dispatch_lease: Duration,
    /// `/metrics` answers a request with this bearer token; without one, only loopback clients.
    pub metrics_token: Option<secrecy::SecretString>,
    /// Reverse proxies whose `X-Forwarded-For` names the client (`RERUN_GATE_TRUSTED_PROXIES`).
    pub trusted_proxies: Vec<std::net::IpAddr>,
    /// Password checks that run at once, and how many may wait for a turn (beyond: 429). One per core, eight
    /// per core waiting.
    pub password_checks_at_once: usize,
    pub password_check_queue: usize,
    /// Each API client's steady rate per second and burst (`RERUN_GATE_API_RATE_PER_SECOND`, `…_API_BURST`).
    pub api_rate_per_second: u32,
    pub api_burst: u32,
    /// Signs the audit chain's checkpoints (`RERUN_GATE_AUDIT_KEY_FILE`, see `audit_key`); without it, nothing
    /// is signed and the admin page says so.
    pub audit_key: Option<Arc<domain::audit_proof::AuditKey>>,
    /// The signer's memory (`audit_witness`): beside the key file, `<key file>.witness`.
    pub audit_witness: Option<std::path::PathBuf>,
}

impl ServerOptions {
    pub fn new(public_url: &str) -> Self {
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        ServerOptions {
            public_url: public_url.trim_end_matches('/').to_string(),
            idle_timeout: Duration::from_secs(30 * 60),
            absolute_timeout: Duration::from_secs(8 * 60 * 60),
            demo_systems: false,
            request_timeout: Duration::from_secs(30),
            dispatch_timeout: Duration::from_secs(10),
            dispatch_lease: Duration::from_secs(120),
            metrics_token: None,
            trusted_proxies: Vec::new(),
            password_checks_at_once: cores,
            password_check_queue: 8 * cores,
            api_rate_per_second: 1_000,
            api_burst: 2_000,
            audit_key: None,
            audit_witness: None,
        }
    }

    /// Plain HTTP is allowed only for a loopback public URL (local trial); then the cookie cannot be
    /// `Secure` nor carry the `__Host-` prefix (QUALITY 1).
    pub fn is_local_http(&self) -> bool {
        let rest = match self.public_url.strip_prefix("http://") {
            Some(rest) => rest,
            None => return false,
        };
        let host = rest.split('/').next().unwrap_or("");
        let host = host.rsplit_once(':').map_or(
            host,
            |(h, port)| {
                if port.chars().all(|c| c.is_ascii_digit()) { h } else { host }
            },
        );
        matches!(host, "localhost" | "127.0.0.1" | "[::1]")
    }

    pub fn session_cookie_name(&self) -> &'static str {
        if self.is_local_http() { "rerun_gate_session" } else { "__Host-rerun_gate_session" }
    }
}

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
    /// API tokens checked in the last few seconds.
    pub tokens: Arc<services::api_clients::TokenCache>,
    /// The steps this instance changed last (a guess that saves a read; see `known_steps`).
    pub known_steps: Arc<services::known_steps::KnownSteps>,
    /// Rung when an approval puts a rerun in the outbox, so this instance's dispatcher sends it at once
    /// instead of at its next poll (other instances still find it by polling).
    pub dispatch_wake: Arc<tokio::sync::Notify>,
    /// Set when the process is shutting down: the dispatcher finishes what it claimed and claims no more.
    pub stopping: Arc<std::sync::atomic::AtomicBool>,
    /// HTTP requests seen by this instance, for `/metrics`.
    pub metrics: Arc<metrics::HttpMetrics>,
    /// Turns for the Argon2 checks of sign-ins and password changes (bounded memory under a flood).
    pub password_checks: Arc<passwords::Checks>,
    /// Each API client's rate (`services::api_clients::RateLimits`).
    pub api_limits: Arc<services::api_clients::RateLimits>,
    /// Signs checkpoints of the audit chain (one per process: it remembers how far it checked the chain).
    pub audit_signer: Arc<services::audit_proof::Signer>,
    /// The company's identity provider (`[sign_in.oidc]`), its discovery and keys cached.
    pub oidc: Option<Arc<oidc::Provider>>,
    /// The Slack app (`[chat.slack]`), and Sign in with Slack for linking accounts.
    pub slack: Option<Arc<slack::Slack>>,
    pub slack_sign_in: Option<Arc<oidc::Provider>>,
    /// The Teams bot (`[chat.teams]`), its Bot Framework keys cached.
    pub teams: Option<Arc<teams::Teams>>,
}

impl AppState {
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
        let password_checks =
            Arc::new(passwords::Checks::new(server.password_checks_at_once, server.password_check_queue));
        let api_limits = Arc::new(services::api_clients::RateLimits::new(server.api_rate_per_second, server.api_burst));
        let audit_signer =
            Arc::new(services::audit_proof::Signer::new(server.audit_key.clone(), server.audit_witness.as_deref()));
        let public_url = &server.public_url;
        let oidc =
            config.sign_in.oidc.as_ref().map(|c| identity_provider(c, public_url, SIGN_IN_CALLBACK)).transpose()?;
        let slack = config.slack.as_ref().map(slack::Slack::new).transpose()?.map(Arc::new);
        let teams = config.teams.as_ref().map(teams::Teams::new).transpose()?.map(Arc::new);
        let slack_sign_in =
            config.slack.as_ref().map(|c| identity_provider(&c.oidc(), public_url, SLACK_LINK_CALLBACK)).transpose()?;
        Ok(AppState(Arc::new(Parts {
            db,
            clock,
            server: Arc::new(server),
            config: Arc::new(config),
            connectors: Arc::new(connectors),
            tokens: Arc::default(),
            known_steps: Arc::default(),
            dispatch_wake: Arc::default(),
            stopping: Arc::default(),
            metrics: Arc::default(),
            password_checks,
            api_limits,
            audit_signer,
            oidc,
            slack,
            slack_sign_in,
            teams,
        })))
    }

    /// The same state reading another clock (the demo cases play a past hour).
    pub fn with_clock(&self, clock: Arc<dyn Clock>) -> AppState {
        AppState(Arc::new(Parts { clock, ..(*self.0).clone() }))
    }
}

/// Where the company's identity provider sends people back, and where Slack's sign-in does (linking).
pub const SIGN_IN_CALLBACK: &str = "/sign-in/oidc/callback";
pub const SLACK_LINK_CALLBACK: &str = "/account/slack/callback";

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

#[cfg(test)]
mod tests {
    use super::ServerOptions;

    #[test]
    fn only_a_loopback_http_url_counts_as_local_mode() {
        assert!(ServerOptions::new("http://127.0.0.1:3000").is_local_http());
        assert!(ServerOptions::new("http://localhost").is_local_http());
        assert!(!ServerOptions::new("http://rerun.example.com").is_local_http());
        assert!(!ServerOptions::new("https://localhost").is_local_http());
        assert!(!ServerOptions::new("http://localhost.evil.com").is_local_http());
    }

    #[test]
    fn the_secure_cookie_carries_the_host_prefix() {
        assert_eq!(ServerOptions::new("https://rg.example.com").session_cookie_name(), "__Host-rerun_gate_session");
    }
}
