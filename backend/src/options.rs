//! The server process's options (`ServerOptions`).
use crate::turns::Limits;
use std::sync::Arc;
use std::time::Duration;

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
    /// The database's connection pools (`RERUN_GATE_DB_*`).
    pub pools: crate::db::pools::PoolSettings,
    /// How many requests of each kind run at once and wait (`RERUN_GATE_{PAGES,API,EXPORTS}_*`).
    pub admission: Admission,
}

/// Requests of each kind take turns (`crate::turns`): pages (with the sign-in steps and small downloads), the
/// calls of open pages (server functions: a decision, a confirmation, the next page's data), the API and webhooks,
/// and exports. Health checks, metrics and the demo's systems take none.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Admission {
    pub pages: Limits,
    pub calls: Limits,
    pub api: Limits,
    pub exports: Limits,
}

impl Admission {
    /// For `cores` cores: a page is a few milliseconds of one core's work, so one page per core keeps them busy,
    /// and more at once would only take the cores from the API and the dispatcher (measured: with 8 pages per core
    /// step events kept a quarter of their rate while 128 clients browsed, with one per core half). The queue
    /// holds what the server answers in well under a second, and beyond it the excess is shed at once; a wait's
    /// own limit (3 s, far from the pool's timeout) is for a server that has stopped answering, not for a busy
    /// one: at 1 s, 128 clients browsing beside 8 sending step events (~190 pages/s, a full queue ~0.7 s of
    /// work) had 10 of 5,760 pages shed (bench, 2026-12-07). Downloads run one per export connection, a few
    /// waiting up to half a minute. The calls of open pages have turns of their own, so that a person's click in
    /// a page already open (a manager's approval) does not wait behind a crowd loading pages.
    pub fn for_cores(cores: usize, pools: &crate::db::pools::PoolSettings) -> Self {
        let cores = cores.max(1);
        let wait = Some(Duration::from_secs(3));
        Admission {
            pages: Limits { at_once: cores, waiting: 128, max_wait: wait },
            calls: Limits { at_once: cores, waiting: 128, max_wait: wait },
            api: Limits { at_once: 16 * cores, waiting: 512, max_wait: wait },
            exports: Limits { at_once: pools.exports as usize, waiting: 4, max_wait: Some(Duration::from_secs(30)) },
        }
    }
}

impl ServerOptions {
    pub fn new(public_url: &str) -> Self {
        let cores = cores();
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
            pools: Default::default(),
            admission: Admission::for_cores(cores, &Default::default()),
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

/// The cores this process may use (2 when the system does not say).
pub fn cores() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get())
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
