//! Starting the app for a test, and a small client that keeps cookies by hand (so tests can replay them).
use backend::{AppState, Db, ManualClock, ServerOptions};
use chrono::{TimeZone, Utc};
use reqwest::StatusCode;
use serde_json::Value;
use std::sync::Arc;

pub const PASSWORD: &str = "kumo-ame-yuki-2026";

/// Secrets the tests configure through environment variables, as production does.
pub const WEBHOOK_SECRET_OLD: &str = "whsec_cmVydW4tZ2F0ZS10ZXN0LXNlY3JldC1vbmU=";
pub const WEBHOOK_SECRET_NEW: &str = "whsec_cmVydW4tZ2F0ZS10ZXN0LXNlY3JldC10d28=";
pub const FAKE_AI_KEY: &str = "test-ai-key-0f3b";
pub const FAKE_MAIL_TOKEN: &str = "test-mail-token-77aa";
pub const WRONG_AI_KEY: &str = "sk-wrong-canary-5d1e";
/// The app's secret at the tests' identity provider (`company_sign_in::TestProvider`).
pub const OIDC_CLIENT_SECRET: &str = "test-client-secret-5e1f";
/// The Slack app's bot token and signing secret (`slack_standin`).
pub const SLACK_BOT_TOKEN: &str = "xoxb-test-rerun-gate";
pub const SLACK_SIGNING_SECRET: &str = "8f742231b10e8888abcd99yyyzzz85a5";
/// The Teams bot's client secret (`teams_standin`).
pub const TEAMS_APP_PASSWORD: &str = "test-teams-app-password";
pub const RERUN_SECRET: &str = "whsec_cmVydW4tZ2F0ZS10ZXN0LXJlcnVuLXNpZ25pbmc=";

/// Sets the test suite's variables once, before the first app starts (no thread reads the environment
/// while it changes: every test starts with `TestApp::spawn…`, which waits here).
fn test_environment() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let chat_url = start_chat_sink();
        // SAFETY: runs once, before any app of this process reads its configuration.
        unsafe {
            std::env::set_var("RERUN_GATE_WEBHOOK_SECRET_AI", format!("{WEBHOOK_SECRET_OLD} {WEBHOOK_SECRET_NEW}"));
            std::env::set_var("RG_TEST_AI_KEY", FAKE_AI_KEY);
            std::env::set_var("RG_TEST_MAIL_TOKEN", FAKE_MAIL_TOKEN);
            std::env::set_var("RG_TEST_WRONG_AI_KEY", WRONG_AI_KEY);
            std::env::set_var("RERUN_GATE_SECRET_ORDER_INTAKE", RERUN_SECRET);
            std::env::set_var("RERUN_GATE_SECRET_MONTHLY_BILLING", RERUN_SECRET);
            std::env::set_var("RG_TEST_CHAT_URL", chat_url);
            std::env::set_var("RG_TEST_OIDC_SECRET", OIDC_CLIENT_SECRET);
            std::env::set_var("RG_TEST_SLACK_TOKEN", SLACK_BOT_TOKEN);
            std::env::set_var("RG_TEST_SLACK_SIGNING_SECRET", SLACK_SIGNING_SECRET);
            std::env::set_var("RG_TEST_TEAMS_APP_PASSWORD", TEAMS_APP_PASSWORD);
        }
    });
}
pub const BODY_LIMIT: usize = server::http::BODY_LIMIT_BYTES;

pub struct TestApp {
    pub url: String,
    pub database_url: String,
    pub state: AppState,
    pub clock: Arc<ManualClock>,
    pub http: reqwest::Client,
}

/// The configuration that ships with the repository (and that `make run` uses).
pub fn example_config() -> backend::config::Config {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../rerun-gate.toml");
    server::startup::load_config(Some(&path)).expect("the example configuration is valid")
}

/// PostgreSQL as production runs it: an owner that migrates, and the runtime role the app serves as, which
/// may not change the schema nor the audit trail's history (docs/operations.md, Deployment).
pub const PG_OWNER: &str = "rg_owner";
pub const PG_RUNTIME: &str = "rg_runtime";

/// A fresh, empty database URL on the engine under test: on PostgreSQL, the runtime role's.
pub async fn fresh_database_url() -> String {
    match std::env::var("RERUN_GATE_TEST_ENGINE").as_deref() {
        Ok("postgres") => {
            let admin_url = std::env::var("RERUN_GATE_TEST_PG_URL")
                .expect("RERUN_GATE_TEST_ENGINE=postgres needs RERUN_GATE_TEST_PG_URL");
            let name = format!("t_{}", uuid::Uuid::new_v4().simple());
            let admin = sqlx::PgPool::connect(&admin_url).await.expect("connect to the test PostgreSQL");
            // Tests start at once: a role another test created meanwhile is no failure.
            for role in [PG_OWNER, PG_RUNTIME] {
                let create = format!(
                    "DO $$ BEGIN CREATE ROLE {role} LOGIN; EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL; END $$"
                );
                sqlx::query(&create).execute(&admin).await.expect("create role");
            }
            let create = format!("CREATE DATABASE {name} OWNER {PG_OWNER}");
            sqlx::query(&create).execute(&admin).await.expect("create database");
            admin.close().await;
            pg_url(&admin_url, PG_RUNTIME, &name)
        }
        Ok("sqlite") | Err(_) => {
            let dir = std::env::temp_dir().join("rerun-gate-tests");
            std::fs::create_dir_all(&dir).unwrap();
            format!("sqlite://{}/{}.db?mode=rwc", dir.display(), uuid::Uuid::new_v4().simple())
        }
        Ok(other) => panic!("unknown RERUN_GATE_TEST_ENGINE '{other}'"),
    }
}

/// The server's URL signed in as `user`, on database `name`.
fn pg_url(admin_url: &str, user: &str, name: &str) -> String {
    let mut url = reqwest::Url::parse(admin_url).expect("a PostgreSQL URL");
    url.set_username(user).unwrap();
    url.set_path(name);
    url.to_string()
}

/// The owner's URL that migrates a test's PostgreSQL database (`RERUN_GATE_MIGRATE_URL`); none on SQLite.
pub fn migrate_url(database_url: &str) -> Option<String> {
    let admin_url = std::env::var("RERUN_GATE_TEST_PG_URL").ok()?;
    let name = database_url.strip_prefix("postgres://")?.rsplit_once('/')?.1;
    Some(pg_url(&admin_url, PG_OWNER, name))
}

/// A statement on a test's PostgreSQL database as a superuser: whoever runs the database.
pub async fn as_superuser(pool: &sqlx::PgPool, sql: &str) -> Result<(), sqlx::Error> {
    let admin_url = std::env::var("RERUN_GATE_TEST_PG_URL").expect("the test PostgreSQL");
    let name = pool.connect_options().get_database().expect("a database name").to_string();
    let admin = sqlx::PgPool::connect(&pg_url(&admin_url, "postgres", &name)).await?;
    let done = sqlx::query(sql).execute(&admin).await.map(drop);
    admin.close().await;
    done
}

/// A test's database goes with it: its SQLite files, or its PostgreSQL database (a full run used to leave
/// gigabytes behind, and a CI machine short of disk failed every test after the disk filled).
impl Drop for TestApp {
    fn drop(&mut self) {
        if let Some(path) = self.database_file() {
            for suffix in ["", "-wal", "-shm"] {
                let _ = std::fs::remove_file(format!("{path}{suffix}"));
            }
        } else if let (Ok(admin_url), Some((_, name))) =
            (std::env::var("RERUN_GATE_TEST_PG_URL"), self.database_url.rsplit_once('/'))
        {
            // Drop runs inside the test's runtime, which cannot be blocked on: a thread with its own does the work.
            let statement = format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)");
            let _ = std::thread::spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
                runtime.block_on(async move {
                    if let Ok(admin) = sqlx::PgPool::connect(&admin_url).await {
                        let _ = sqlx::query(&statement).execute(&admin).await;
                        admin.close().await;
                    }
                });
            })
            .join();
        }
    }
}

/// The suite's audit signing key (one per test process, as one per installation).
pub fn audit_key() -> &'static Arc<domain::audit_proof::AuditKey> {
    static KEY: std::sync::OnceLock<Arc<domain::audit_proof::AuditKey>> = std::sync::OnceLock::new();
    KEY.get_or_init(|| Arc::new(domain::audit_proof::AuditKey::generate()))
}

/// A new, empty signer's memory for one test app (the suite's key is shared; each installation has its own).
fn fresh_witness() -> std::path::PathBuf {
    let path = std::env::temp_dir().join(format!("rerun-gate-{}.witness", uuid::Uuid::new_v4().simple()));
    backend::audit_witness::Witness::create(&path).expect("a new signer's memory");
    path
}

/// The suite key's public half in a PEM file, as an auditor keeps it.
pub fn public_key_file() -> &'static std::path::Path {
    static FILE: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    FILE.get_or_init(|| {
        let path = std::env::temp_dir().join(format!("rerun-gate-audit-{}.pub.pem", std::process::id()));
        std::fs::write(&path, audit_key().public().to_pem()).unwrap();
        path
    })
}

/// Chat messages received by the suite's one chat sink (a Slack-compatible incoming webhook on loopback).
pub static CHAT_MESSAGES: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

/// The chat sink lives on its own thread for the whole test process (each test's runtime ends with it).
fn start_chat_sink() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/chat", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        runtime.block_on(async move {
            listener.set_nonblocking(true).unwrap();
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            let app = axum::Router::new().route(
                "/chat",
                axum::routing::post(|body: axum::Json<Value>| async move {
                    CHAT_MESSAGES.lock().unwrap().push(body["text"].as_str().unwrap_or_default().to_string());
                    "ok"
                }),
            );
            axum::serve(listener, app).await.unwrap();
        });
    });
    url
}

impl TestApp {
    /// The app as a local trial serves it (plain HTTP on loopback).
    pub async fn spawn() -> TestApp {
        Self::spawn_with(|_| {}).await
    }

    /// Tests run on a multi-thread runtime, as the server does in production: Leptos' streaming SSR can stall a
    /// response on a single-threaded runtime (leptos-rs/leptos#4647), which once hung a CI run.
    pub async fn spawn_with(configure: impl FnOnce(&mut ServerOptions)) -> TestApp {
        Self::spawn_configured(configure, example_config()).await
    }

    /// The app with the demo outside systems served under `/demo/` (as `serve --demo` does).
    pub async fn spawn_with_demo_systems() -> TestApp {
        Self::spawn_with(|s| s.demo_systems = true).await
    }

    /// The demo loop: the demo outside systems served, and every workflow's reruns sent to the demo receiver
    /// of this same app (as `make run` has it).
    pub async fn spawn_with_demo_loop() -> TestApp {
        Self::spawn_knowing_url(
            |s| s.demo_systems = true,
            |url| {
                let mut config = example_config();
                config.workflows.iter_mut().for_each(|w| w.rerun_url = format!("{url}/demo/rerun"));
                config
            },
        )
        .await
    }

    pub async fn spawn_configured(
        configure: impl FnOnce(&mut ServerOptions),
        config: backend::config::Config,
    ) -> TestApp {
        Self::spawn_knowing_url(configure, |_| config).await
    }

    /// For a configuration that points at the app itself (the demo receiver): built once the URL is known.
    pub async fn spawn_knowing_url(
        configure: impl FnOnce(&mut ServerOptions),
        config: impl FnOnce(&str) -> backend::config::Config,
    ) -> TestApp {
        Self::spawn_at(Utc.with_ymd_and_hms(2026, 11, 30, 0, 0, 0).unwrap(), configure, config).await
    }

    /// The same, its clock starting at `start`: programs outside the test that check timestamps against the real
    /// time (a rerun receiver's signature tolerance) need a clock near it.
    pub async fn spawn_at(
        start: chrono::DateTime<Utc>,
        configure: impl FnOnce(&mut ServerOptions),
        config: impl FnOnce(&str) -> backend::config::Config,
    ) -> TestApp {
        assert_eq!(
            tokio::runtime::Handle::current().runtime_flavor(),
            tokio::runtime::RuntimeFlavor::MultiThread,
            "use #[tokio::test(flavor = \"multi_thread\", worker_threads = 2)]"
        );
        test_environment();
        server::telemetry::init_for_tests();
        backend::reconciliation::ssrf::install_tls_provider();
        let database_url = fresh_database_url().await;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let mut server_options = ServerOptions::new(&format!("http://{addr}"));
        server_options.audit_key = Some(audit_key().clone());
        server_options.audit_witness = Some(fresh_witness());
        configure(&mut server_options);
        let config = config(&server_options.public_url);
        let clock = Arc::new(ManualClock::new(start));
        Self::start(database_url, listener, server_options, config, clock).await
    }

    /// The same installation started again (its database, key, signer's memory and clock) on a new port.
    pub async fn restarted(self) -> TestApp {
        self.restarted_with(|_| {}).await
    }

    /// Started again with other options (another audit signing key).
    pub async fn restarted_with(self, configure: impl FnOnce(&mut ServerOptions)) -> TestApp {
        let config = (*self.state.config).clone();
        self.restarted_as(configure, config).await
    }

    /// Started again with another configuration (`rerun-gate.toml` changed).
    pub async fn restarted_with_config(self, config: backend::config::Config) -> TestApp {
        self.restarted_as(|_| {}, config).await
    }

    async fn restarted_as(
        mut self,
        configure: impl FnOnce(&mut ServerOptions),
        config: backend::config::Config,
    ) -> TestApp {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let mut server_options = (*self.state.server).clone();
        server_options.public_url = format!("http://{}", listener.local_addr().unwrap());
        configure(&mut server_options);
        self.state.close().await;
        // The database goes on with the new app (this one's drop would remove it).
        let database_url = std::mem::take(&mut self.database_url);
        Self::start(database_url, listener, server_options, config, self.clock.clone()).await
    }

    /// Opens the database and serves the app on `listener`, checking the audit signer's memory as the server
    /// does at start.
    async fn start(
        database_url: String,
        listener: tokio::net::TcpListener,
        server_options: ServerOptions,
        config: backend::config::Config,
        clock: Arc<ManualClock>,
    ) -> TestApp {
        let addr = listener.local_addr().unwrap();
        let migrate_url = migrate_url(&database_url);
        let db = server::startup::open_database_as(&database_url, migrate_url.as_deref(), &server_options.pools)
            .await
            .expect("open database");
        let state = server::startup::state(db, clock.clone(), server_options, config).await.expect("state");
        backend::services::audit_proof::check_memory(&state).await.expect("check the signer's memory");
        let mut options = server::startup::leptos_options().unwrap();
        options.site_addr = addr;
        let router = server::startup::router(state.clone(), options);
        tokio::spawn(server::startup::serve(listener, router));
        // A request that hangs fails its test within seconds instead of holding up the whole run.
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(std::time::Duration::from_secs(20))
            .build()
            .unwrap();
        TestApp { url: format!("http://{addr}"), database_url, state, clock, http }
    }

    pub fn db(&self) -> &Db {
        &self.state.db
    }

    /// The SQLite database's file; `None` on PostgreSQL.
    pub fn database_file(&self) -> Option<&str> {
        self.database_url.strip_prefix("sqlite://").and_then(|rest| rest.split('?').next())
    }

    /// How many of this process's file handles are on the SQLite database's files (its `-wal` and `-shm` too).
    pub fn open_database_files(&self) -> usize {
        let Some(file) = self.database_file() else { return 0 };
        std::fs::read_dir("/proc/self/fd")
            .map(|fds| fds.filter_map(|fd| std::fs::read_link(fd.ok()?.path()).ok()).collect::<Vec<_>>())
            .unwrap_or_default()
            .into_iter()
            .filter(|target| target.to_string_lossy().starts_with(file))
            .count()
    }

    /// The server stopped, as an operator stops it before replacing its database file: every pool closed and, on
    /// SQLite, no file of the database open any more. (A closed connection's file handles go with its own thread,
    /// which under load can be a moment after `close` returns; a process that ends closes them all at once.)
    pub async fn stop(&self) {
        self.state.close().await;
        for _ in 0..100 {
            if self.open_database_files() == 0 {
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        let file = self.database_file().unwrap_or_default();
        panic!("{} file(s) of {file} still open 5 s after the app closed its database", self.open_database_files());
    }

    /// The demo outside systems, as this app's demo connectors read them.
    pub fn demo_systems(&self) -> backend::demo::systems::DemoSystems {
        backend::demo::systems::DemoSystems::new(self.state.db.clone(), self.state.clock.clone())
    }

    /// The audit signer's memory of this installation.
    pub fn witness(&self) -> &std::path::Path {
        self.state.server.audit_witness.as_deref().expect("each test app has a signer's memory")
    }

    /// How many notifications of `kind` a user has.
    pub async fn notifications_of(&self, username: &str, kind: &str) -> i64 {
        let mut conn = self.db().connection().await.unwrap();
        let sql = "SELECT COUNT(*) FROM notifications n JOIN users u ON u.id = n.user_id WHERE u.username = $1 AND n.kind = $2";
        match &mut conn {
            backend::db::Conn::Sqlite(c, _) => {
                sqlx::query_scalar(sql).bind(username).bind(kind).fetch_one(&mut **c).await
            }
            backend::db::Conn::Postgres(c, _) => {
                sqlx::query_scalar(sql).bind(username).bind(kind).fetch_one(&mut **c).await
            }
        }
        .unwrap()
    }

    /// Creates a user with the given roles and departments (the example configuration's `sales`, `billing`).
    pub async fn user(&self, username: &str, roles: &[&str], departments: &[&str]) -> i64 {
        let new = contract::admin::NewUser {
            username: username.into(),
            display_name: format!("{username} san"),
            password: PASSWORD.into(),
            roles: roles.iter().map(|r| r.parse().unwrap()).collect(),
            departments: departments.iter().map(|d| d.to_string()).collect(),
            memberships: Vec::new(),
            email: format!("{username}@example.jp"),
        };
        backend::services::users::add(
            &self.state,
            domain::audit::Actor::system(domain::audit::SystemActor::CommandLine),
            None,
            new,
        )
        .await
        .expect("add user")
    }

    /// An API token for the given departments.
    pub async fn token(&self, name: &str, departments: &[&str]) -> String {
        let departments: Vec<String> = departments.iter().map(|d| d.to_string()).collect();
        let (_, token) = backend::services::api_clients::create(
            &self.state,
            domain::audit::Actor::system(domain::audit::SystemActor::CommandLine),
            name,
            &departments,
        )
        .await
        .expect("create token");
        token
    }

    /// A JSON API call with a bearer token and optional Idempotency-Key.
    pub async fn api(
        &self,
        method: reqwest::Method,
        path: &str,
        token: &str,
        key: Option<&str>,
        body: Option<&Value>,
    ) -> Answer {
        let method_name = method.as_str().to_string();
        let method_name = method_name.as_str();
        let mut request = self.http.request(method, format!("{}{path}", self.url)).bearer_auth(token);
        if let Some(key) = key {
            request = request.header("idempotency-key", key);
        }
        if let Some(body) = body {
            request = request.header("content-type", "application/json").body(body.to_string());
        }
        let answer = Answer::from(request.send().await.expect("request")).await;
        crate::contract::check(method_name, path, answer.status, &answer.headers, &answer.body);
        answer
    }

    /// Calls a server function like a program would (form body, JSON answer), with an optional cookie.
    pub async fn call(&self, endpoint: &str, form: &[(&str, &str)], cookie: Option<&str>) -> Answer {
        let mut request = self.http.post(format!("{}/api/{endpoint}", self.url)).form(form);
        if let Some(cookie) = cookie {
            request = request.header("cookie", cookie);
        }
        Answer::from(request.send().await.expect("request")).await
    }

    /// Calls a server function with a JSON body (for arguments that are lists or structs).
    pub async fn call_json(&self, endpoint: &str, body: Value, cookie: Option<&str>) -> Answer {
        let mut request = self
            .http
            .post(format!("{}/api/{endpoint}", self.url))
            .header("content-type", "application/json")
            .body(body.to_string());
        if let Some(cookie) = cookie {
            request = request.header("cookie", cookie);
        }
        Answer::from(request.send().await.expect("request")).await
    }

    /// Signs in and returns the session cookie (`name=value`).
    pub async fn sign_in(&self, username: &str, password: &str) -> String {
        let answer = self.call("sign_in", &[("username", username), ("password", password)], None).await;
        assert_eq!(answer.status, StatusCode::OK, "sign-in of {username} failed: {}", answer.body);
        answer.session_cookie().expect("a session cookie after sign-in")
    }

    pub async fn audit_actions(&self) -> Vec<String> {
        let mut tx = self.db().begin_read().await.unwrap();
        backend::db::audit::page_after(&mut tx, 0, 10_000).await.unwrap().into_iter().map(|e| e.action).collect()
    }

    /// The `after` of every audit event with this action, oldest first.
    pub async fn audit_after(&self, action: &str) -> Vec<Value> {
        let mut tx = self.db().begin_read().await.unwrap();
        let events = backend::db::audit::page_after(&mut tx, 0, 10_000).await.unwrap();
        let after = events.into_iter().filter(|e| e.action == action).filter_map(|e| e.after_json);
        after.map(|json| serde_json::from_str(&json).unwrap()).collect()
    }
}

pub struct Answer {
    pub status: StatusCode,
    pub headers: reqwest::header::HeaderMap,
    pub body: String,
}

impl Answer {
    async fn from(response: reqwest::Response) -> Answer {
        let status = response.status();
        let headers = response.headers().clone();
        let body = response.text().await.unwrap_or_default();
        Answer { status, headers, body }
    }

    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.body))
    }

    pub fn set_cookies(&self) -> Vec<String> {
        self.headers.get_all("set-cookie").iter().map(|v| v.to_str().unwrap().to_string()).collect()
    }

    /// The `name=value` of the session cookie this answer set, if any.
    pub fn session_cookie(&self) -> Option<String> {
        self.set_cookies()
            .iter()
            .find(|c| c.contains("rerun_gate_session="))
            .map(|c| c.split(';').next().unwrap().to_string())
    }
}

/// The server binary as a command, with a site folder holding the files the pages ask for: `serve` stops at
/// start without them (`server::site::check`), and these tests need no browser bundle.
pub fn server_command(binary: impl AsRef<std::ffi::OsStr>) -> std::process::Command {
    let mut command = std::process::Command::new(binary);
    command.env("LEPTOS_SITE_ROOT", test_site());
    command
}

fn test_site() -> &'static std::path::Path {
    static SITE: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    SITE.get_or_init(|| {
        let site = std::env::temp_dir().join(format!("rerun-gate-test-site-{}", uuid::Uuid::new_v4()));
        let hashes = "js: TestSiteTestSiteTestSi\nwasm: TestSiteTestSiteTestSi\ncss: TestSiteTestSiteTestSi\n";
        std::fs::create_dir_all(site.join("pkg")).unwrap();
        std::fs::write(site.join("hash.txt"), hashes).unwrap();
        for name in ["js", "wasm", "css"].map(|kind| format!("rerun-gate.TestSiteTestSiteTestSi.{kind}")) {
            std::fs::write(site.join("pkg").join(name), b"").unwrap();
        }
        site
    })
}

/// Signs in at a server started with `server_process` and returns its session cookie (`name=value`).
pub async fn sign_in_at(http: &reqwest::Client, url: &str, username: &str, password: &str) -> String {
    let signed_in = http
        .post(format!("{url}/api/sign_in"))
        .form(&[("username", username), ("password", password)])
        .send()
        .await
        .unwrap();
    assert_eq!(signed_in.status(), StatusCode::OK, "sign-in of {username} at {url}");
    Answer::from(signed_in).await.session_cookie().expect("a session cookie after sign-in")
}

/// The server binary as a process of its own on a free port, serving `database_url` with `config`, once it
/// answers `/readyz`; its standard output and errors go to `log`, or nowhere.
pub async fn server_process(
    database_url: &str,
    config: &std::path::Path,
    env: &[(&str, &str)],
    log: Option<&std::path::Path>,
) -> (std::process::Child, String) {
    use std::process::Stdio;
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let url = format!("http://127.0.0.1:{port}");
    let output = || match log {
        Some(path) => Stdio::from(std::fs::File::options().create(true).append(true).open(path).unwrap()),
        None => Stdio::null(),
    };
    // `make bench` runs the soak against the release binary.
    let binary = std::env::var("RERUN_GATE_TEST_SERVER_BIN").unwrap_or_else(|_| env!("CARGO_BIN_EXE_server").into());
    let child = server_command(binary)
        .arg("serve")
        .env("DATABASE_URL", database_url)
        .env("RERUN_GATE_CONFIG", config)
        .env("LEPTOS_SITE_ADDR", format!("127.0.0.1:{port}"))
        .envs(env.iter().copied())
        .stdout(output())
        .stderr(output())
        .spawn()
        .expect("start the server binary");
    let http = reqwest::Client::new();
    for _ in 0..200 {
        if http.get(format!("{url}/readyz")).send().await.is_ok_and(|r| r.status().is_success()) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    (child, url)
}

/// Pool timeouts and panics in the server's log, each panic with what follows it (its message and, under
/// `RUST_BACKTRACE=1`, its backtrace).
pub fn server_troubles(log: &str) -> Vec<String> {
    let lines: Vec<&str> = log.lines().collect();
    let found = lines.iter().enumerate().filter(|(_, l)| l.contains("pool timed out") || l.contains("panicked"));
    found.map(|(i, _)| lines[i..(i + 60).min(lines.len())].join("\n")).take(3).collect()
}

/// The security guide's Python check named by `marker`, run as written there with `args`.
pub fn guide_script(marker: &str, args: &[&std::path::Path]) -> std::process::Output {
    let guide = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/security.md")).unwrap();
    let script = guide
        .split("```python\n")
        .filter_map(|block| block.split_once("```").map(|(code, _)| code))
        .find(|code| code.contains(marker))
        .expect("docs/security.md shows the check in Python");
    let file = std::env::temp_dir().join(format!("guide-{}.py", uuid::Uuid::new_v4().simple()));
    std::fs::write(&file, script).unwrap();
    let output = std::process::Command::new("python3").arg(&file).args(args).output().unwrap();
    let _ = std::fs::remove_file(file);
    output
}
