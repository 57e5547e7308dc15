//! The command line of the `server` binary (SPEC "Command line").
use backend::audit_witness::Witness;
use backend::demo::{self, DemoCredential};
use backend::services::{self, audit::Verification, backup::Backup};
use backend::{AppState, ServerOptions};
use chrono::{DateTime, Utc};
use clap::{Parser, Subcommand};
use contract::admin::NewUser;
use domain::audit::{Actor, SystemActor};
use domain::audit_export::{AuditFilter, ExportChecker, ExportFormat, Line};
use domain::audit_proof::{ExportProof, ProofSummary, PublicKey, SignedCheckpoint};
use domain::membership::Membership;
use domain::roles::Role;
use std::io::BufRead;
use std::io::Read;
use std::path::Path;

pub const DEFAULT_DATABASE_URL: &str = "sqlite://data/rerun-gate.db?mode=rwc";

#[derive(Parser, Debug)]
#[command(name = "server", about = "Rerun Gate: re-run stalled integrations safely")]
pub struct Cli {
    /// `sqlite://…` (embedded default) or `postgres://…`.
    #[arg(long, env = "DATABASE_URL", default_value = DEFAULT_DATABASE_URL, global = true, hide_env_values = true)]
    pub database_url: String,
    /// PostgreSQL: the owner's URL, with which the schema is migrated and the role of DATABASE_URL is granted
    /// its rights at start (that role then cannot change the schema or the audit trail's history).
    #[arg(long, env = "RERUN_GATE_MIGRATE_URL", global = true, hide_env_values = true)]
    pub migrate_url: Option<String>,
    /// The origin browsers use; defaults to http:// plus the listen address.
    #[arg(long, env = "RERUN_GATE_PUBLIC_URL", global = true)]
    pub public_url: Option<String>,
    /// The configuration file (departments, connectors, workflows); default rerun-gate.toml.
    #[arg(long, env = "RERUN_GATE_CONFIG", global = true)]
    pub config: Option<std::path::PathBuf>,
    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Serve the app (the default). Address from LEPTOS_SITE_ADDR.
    Serve {
        /// Load the demo users into an empty database (loopback addresses only).
        #[arg(long, env = "RERUN_GATE_DEMO")]
        demo: bool,
        /// Seconds between two sweeps for stalled operations.
        #[arg(long, env = "RERUN_GATE_SWEEP_SECONDS", default_value_t = 15)]
        sweep_seconds: u64,
    },
    /// Apply the database migrations and exit (PostgreSQL: as the owner).
    Migrate {
        /// PostgreSQL: the role the app serves as, granted its rights (and no more) after the migrations.
        #[arg(long)]
        runtime_role: Option<String>,
    },
    /// Manage users.
    User {
        #[command(subcommand)]
        command: UserCommand,
    },
    /// API tokens for integrations.
    Token {
        #[command(subcommand)]
        command: TokenCommand,
    },
    /// The company directory's provisioning (SCIM 2.0).
    Scim {
        #[command(subcommand)]
        command: ScimCommand,
    },
    /// Check or export the audit trail.
    Audit {
        #[command(subcommand)]
        command: AuditCommand,
    },
    /// Demo data.
    Demo {
        #[command(subcommand)]
        command: DemoCommand,
    },
    /// SQLite: copy the database while the app runs (`VACUUM INTO`), then check the copy (integrity and the
    /// audit chain). PostgreSQL: use pg_dump.
    Backup {
        /// The new file (must not exist yet).
        #[arg(long)]
        to: std::path::PathBuf,
    },
    /// Integrations: check a workflow's rerun endpoint with test calls that change nothing.
    Integration {
        #[command(subcommand)]
        command: IntegrationCommand,
    },
    /// Print the ingestion API's OpenAPI document (what `/api/openapi.json` serves), for client kits and tools.
    Openapi,
}

#[derive(Subcommand, Debug)]
pub enum UserCommand {
    /// Add a user; the password is read from standard input.
    Add {
        #[arg(long)]
        username: String,
        #[arg(long)]
        display_name: String,
        /// staff, manager, auditor or admin; repeat for several. Staff and manager are held in each
        /// `--department` of this call.
        #[arg(long = "role", required_unless_present = "memberships", value_parser = |s: &str| s.parse::<Role>())]
        roles: Vec<Role>,
        /// Department code; repeat for several.
        #[arg(long = "department", num_args = 1..)]
        departments: Vec<String>,
        /// A role in one department, DEPARTMENT:ROLE (sales:manager); repeat for several.
        #[arg(long = "member", value_parser = |s: &str| Membership::parse(s))]
        memberships: Vec<Membership>,
        /// Where e-mail notifications go (optional).
        #[arg(long)]
        email: Option<String>,
        /// Read the password from standard input (the only way: never on the command line).
        #[arg(long, required = true)]
        password_stdin: bool,
    },
}

#[derive(Subcommand, Debug)]
pub enum IntegrationCommand {
    /// Send test calls (`rerun.test`) to the workflow's rerun endpoint — unsigned, wrongly signed, stale, valid,
    /// and the valid one again — and say which expectations the receiver meets. Exit 1 when one is not met.
    Check {
        workflow: String,
        /// Another address than the workflow's `rerun_url` (e.g. a staging receiver).
        #[arg(long)]
        url: Option<String>,
        /// The variable that holds the signing secret, instead of the workflow's `signing_secret_env` (the
        /// server's own variable, e.g. `RERUN_GATE_SECRET_ORDER_INTAKE`, is usually not set where the check runs).
        #[arg(long)]
        secret_env: Option<String>,
        /// The report's language, `ja` or `en`; by default `LANG`'s (`C` and `POSIX` are English).
        #[arg(long)]
        lang: Option<String>,
    },
}

#[derive(Subcommand, Debug)]
pub enum TokenCommand {
    /// Create an API client and print its token (shown only this once).
    Create {
        #[arg(long)]
        name: String,
        /// Department code the token may use; repeat for several.
        #[arg(long = "department", required = true, num_args = 1..)]
        departments: Vec<String>,
    },
}

#[derive(Subcommand, Debug)]
pub enum ScimCommand {
    /// The directory's bearer token (Entra ID's "Secret Token", Okta's "API token").
    Token {
        #[command(subcommand)]
        command: ScimTokenCommand,
    },
}

#[derive(Subcommand, Debug)]
pub enum ScimTokenCommand {
    /// Create the directory's token and print it (shown only this once).
    Create {
        #[arg(long)]
        name: String,
    },
    /// Revoke a directory's token (a running server stops accepting it within seconds).
    Revoke {
        #[arg(long)]
        name: String,
    },
}

#[derive(Subcommand, Debug)]
pub enum AuditCommand {
    /// Exit 0 when the chain is intact; else print the first bad sequence number and exit 1. With `--file`, checks
    /// an exported JSON Lines file instead, without the database.
    Verify {
        #[arg(long)]
        file: Option<std::path::PathBuf>,
        /// The public key (PEM, from `server audit public-key`): the trail must also match every signed checkpoint.
        #[arg(long)]
        public_key: Option<std::path::PathBuf>,
        /// An earlier JSON Lines export whose checkpoints the trail must still match (repeat for several).
        #[arg(long = "checkpoints", requires = "public_key")]
        checkpoints: Vec<std::path::PathBuf>,
        /// The signer's memory (`<key file>.witness`): every checkpoint the server signed. Without it, the one
        /// beside `RERUN_GATE_AUDIT_KEY_FILE` is read when there is one.
        #[arg(long, requires = "public_key")]
        witness: Option<std::path::PathBuf>,
    },
    /// End the audit signer's alarm (with the server stopped): which history is true, who decides and why. Kept in
    /// the signer's memory and recorded in the trail; the next checkpoint, signed at once, vouches for it.
    Resolve {
        /// `memory`: the database was brought back to a copy that holds every signed event; `database`: the
        /// signed events it no longer holds are accepted as lost (an older backup restored).
        #[arg(
            long,
            value_parser = |s: &str| domain::signer_alarm::TrueHistory::parse(s)
                .ok_or_else(|| "memory or database".to_string())
        )]
        history: domain::signer_alarm::TrueHistory,
        /// Who decides (their name).
        #[arg(long)]
        by: String,
        #[arg(long)]
        reason: String,
    },
    /// Start the signer's memory for a key made before the memory existed: from the newest checkpoint this key
    /// signed in the database (its signature checked). Once, when upgrading; never over an existing memory.
    StartMemory {
        #[arg(long, env = backend::audit_key::KEY_FILE_ENV)]
        file: std::path::PathBuf,
    },
    /// Create the key that signs the chain's checkpoints, in a new file readable only by its owner.
    Keygen {
        #[arg(long, env = backend::audit_key::KEY_FILE_ENV)]
        file: std::path::PathBuf,
        /// The key this one replaces: its key file (it signs the hand-over too) or its public key (PEM). The new
        /// key signs a statement naming it, kept with the checkpoints.
        #[arg(long)]
        replaces: Option<std::path::PathBuf>,
    },
    /// Print the public key (PEM) of the signing key, for auditors to keep.
    PublicKey {
        #[arg(long, env = backend::audit_key::KEY_FILE_ENV)]
        file: std::path::PathBuf,
    },
    /// Write the trail (or the part the filters choose) to standard output; the export is itself audited.
    Export {
        #[arg(long, value_parser = |s: &str| s.parse::<ExportFormat>())]
        format: ExportFormat,
        /// From this time on (RFC 3339, or a date: midnight in Japan time).
        #[arg(long, value_parser = domain::audit_export::parse_time)]
        from: Option<DateTime<Utc>>,
        /// Before this time (RFC 3339, or a date: midnight in Japan time).
        #[arg(long, value_parser = domain::audit_export::parse_time)]
        to: Option<DateTime<Utc>>,
        #[arg(long)]
        department: Option<String>,
        #[arg(long)]
        actor: Option<String>,
        #[arg(long)]
        action: Option<String>,
        /// The object's type (operation, user, rerun_request…); with --object-id for one object.
        #[arg(long)]
        object_type: Option<String>,
        #[arg(long)]
        object_id: Option<String>,
        #[arg(long)]
        process_id: Option<String>,
    },
}

/// What an auditor trusts: the public key, and checkpoints kept from earlier exports and the signer's memory.
pub fn proof_inputs(
    public_key: Option<&Path>,
    kept: &[std::path::PathBuf],
    witness: Option<&Path>,
) -> anyhow::Result<Option<(PublicKey, Vec<SignedCheckpoint>)>> {
    let Some(path) = public_key else { return Ok(None) };
    let key =
        PublicKey::from_pem(&std::fs::read_to_string(path)?).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    let mut checkpoints = Vec::new();
    for file in kept {
        // An earlier export, or saved digests (e-mails, chat messages).
        let text = std::fs::read_to_string(file).map_err(|e| anyhow::anyhow!("{}: {e}", file.display()))?;
        checkpoints.extend(ExportProof::kept_from(text.lines().map(str::to_string)));
        checkpoints.extend(domain::audit_proof::digests_in(&text));
    }
    if let Some(file) = witness {
        let text = std::fs::read_to_string(file).map_err(|e| anyhow::anyhow!("{}: {e}", file.display()))?;
        let (vouched, resolutions) = backend::audit_witness::checkpoints_to_check(&text);
        for r in resolutions {
            eprintln!(
                "the signer's memory: {} found the {} history true at {} ({}); it went on from event {}",
                r.by,
                r.history.as_str(),
                r.at.to_rfc3339(),
                r.reason,
                r.seq
            );
        }
        checkpoints.extend(vouched);
    }
    Ok(Some((key, checkpoints)))
}

/// The signer's memory to verify with: the one named, else the one beside the key file of this installation.
fn witness_to_read(named: Option<&Path>) -> Option<std::path::PathBuf> {
    named.map(Path::to_path_buf).or_else(|| {
        let key = std::env::var_os(backend::audit_key::KEY_FILE_ENV).filter(|p| !p.is_empty())?;
        let witness = backend::audit_witness::path_for(Path::new(&key));
        eprintln!("checking against the signer's memory {}", witness.display());
        Some(witness)
    })
}

/// `audit verify --file`: an export checked without the database.
pub fn verify_offline(command: &AuditCommand) -> anyhow::Result<i32> {
    let AuditCommand::Verify { file: Some(path), public_key, checkpoints, witness } = command else {
        anyhow::bail!("not an offline check");
    };
    let witness = public_key.as_ref().and_then(|_| witness_to_read(witness.as_deref()));
    verify_export_file(path, proof_inputs(public_key.as_deref(), checkpoints, witness.as_deref())?)
}

/// Checks an exported JSON Lines file offline (with a public key, against its signed checkpoints and the kept
/// ones too); returns the exit code.
pub fn verify_export_file(path: &Path, proof: Option<(PublicKey, Vec<SignedCheckpoint>)>) -> anyhow::Result<i32> {
    let file = std::io::BufReader::new(std::fs::File::open(path)?);
    let (key, kept) = proof.map_or((None, Vec::new()), |(key, kept)| (Some(key), kept));
    let mut checker = ExportChecker::default();
    let mut proof = ExportProof::new(key, kept);
    for line in file.lines() {
        let problem = match checker.line(&line?) {
            Ok(Line::Row { seq, hash }) => proof.row(seq, &hash).err().map(|p| p.to_string()),
            Ok(Line::Checkpoint(value)) => proof.checkpoint(value).err(),
            Ok(Line::KeyStatement(value)) => proof.statement(value).err(),
            Ok(Line::Blank | Line::Trailer) => None,
            Err(broken) => Some(broken.problem),
        };
        if let Some(problem) = problem {
            println!("export broken at line {}: {problem}", checker.line_number());
            return Ok(1);
        }
    }
    let checkpoints = proof.checkpoints();
    let summary = match checker.finish() {
        Ok(summary) => summary,
        Err(broken) => {
            println!("export broken at line {}: {}", broken.line, broken.problem);
            return Ok(1);
        }
    };
    let whole = if summary.complete { "the whole chain up to its head" } else { "a filtered part of the chain" };
    match proof.finish(summary.last, summary.complete) {
        Ok(proven) => {
            println!("export intact: {} events, {} links checked; {whole}", summary.rows, summary.linked);
            print_proof(proven.as_ref(), checkpoints);
            Ok(0)
        }
        Err(problem) => {
            println!("export does not match its signed checkpoints: {problem}");
            Ok(1)
        }
    }
}

/// What the signed checkpoints showed, or that they were not checked.
fn print_proof(proof: Option<&ProofSummary>, checkpoints: usize) {
    match proof {
        Some(p) => {
            let latest =
                p.latest.map_or(String::new(), |(seq, at)| format!("; the newest at event {seq}, signed {at}"));
            println!("signed checkpoints matched: {}{latest}", p.matched);
            if p.unchecked > 0 {
                println!("checkpoints of events this file does not hold: {}", p.unchecked);
            }
        }
        None if checkpoints > 0 => println!("{checkpoints} signed checkpoints not checked: give --public-key"),
        None => {}
    }
}

#[derive(Subcommand, Debug)]
pub enum DemoCommand {
    /// Load the demo into an empty database and print the one-time passwords.
    Load,
    /// Mark this database as a drill environment (e.g. a copy restored for practice): drills may then run on
    /// it. Never do this on the production database.
    MarkDrill,
}

impl Cli {
    pub fn server_options(&self, site_addr: std::net::SocketAddr) -> anyhow::Result<ServerOptions> {
        let public_url = self.public_url.clone().unwrap_or_else(|| format!("http://{site_addr}"));
        let mut server = ServerOptions::new(&public_url);
        let number = |name: &str| std::env::var(name).ok().and_then(|s| s.trim().parse::<u32>().ok());
        let seconds = |name: &str, default| number(name).map_or(default, |s| std::time::Duration::from_secs(s.into()));
        server.dispatch_lease = seconds("RERUN_GATE_DISPATCH_LEASE_SECONDS", server.dispatch_lease);
        server.dispatch_timeout = seconds("RERUN_GATE_DISPATCH_TIMEOUT_SECONDS", server.dispatch_timeout);
        server.api_rate_per_second = number("RERUN_GATE_API_RATE_PER_SECOND").unwrap_or(server.api_rate_per_second);
        server.api_burst = number("RERUN_GATE_API_BURST").unwrap_or(server.api_burst);
        let pools = &mut server.pools;
        pools.work = number("RERUN_GATE_DB_WORK_CONNECTIONS").unwrap_or(pools.work);
        pools.pages = number("RERUN_GATE_DB_PAGE_CONNECTIONS").unwrap_or(pools.pages);
        pools.exports = number("RERUN_GATE_DB_EXPORT_CONNECTIONS").unwrap_or(pools.exports);
        pools.acquire_timeout = seconds("RERUN_GATE_DB_ACQUIRE_TIMEOUT_SECONDS", pools.acquire_timeout);
        // The turns follow the pools (an export's turn is an export connection); then what is set.
        server.admission = backend::options::Admission::for_cores(backend::options::cores(), pools);
        let count = |name: &str| number(&format!("RERUN_GATE_{name}")).map(|n| n as usize);
        let admission = &mut server.admission;
        admission.pages.at_once = count("PAGES_AT_ONCE").unwrap_or(admission.pages.at_once);
        admission.pages.waiting = count("PAGES_WAITING").unwrap_or(admission.pages.waiting);
        admission.calls.at_once = count("CALLS_AT_ONCE").unwrap_or(admission.calls.at_once);
        admission.calls.waiting = count("CALLS_WAITING").unwrap_or(admission.calls.waiting);
        admission.api.at_once = count("API_AT_ONCE").unwrap_or(admission.api.at_once);
        admission.api.waiting = count("API_WAITING").unwrap_or(admission.api.waiting);
        admission.exports.waiting = count("EXPORTS_WAITING").unwrap_or(admission.exports.waiting);
        server.metrics_token = std::env::var("RERUN_GATE_METRICS_TOKEN").ok().filter(|t| !t.is_empty()).map(Into::into);
        let proxies = std::env::var("RERUN_GATE_TRUSTED_PROXIES").unwrap_or_default();
        server.trusted_proxies = domain::forwarding::parse_trusted(&proxies).map_err(anyhow::Error::msg)?;
        if let Some(path) = std::env::var_os(backend::audit_key::KEY_FILE_ENV).filter(|p| !p.is_empty()) {
            let key = backend::audit_key::load(std::path::Path::new(&path)).map_err(anyhow::Error::msg)?;
            server.audit_key = Some(std::sync::Arc::new(key));
            server.audit_witness = Some(backend::audit_witness::path_for(std::path::Path::new(&path)));
        }
        Ok(server)
    }
}

/// Runs a command other than `serve`; returns the process exit code.
pub async fn run_command(state: &AppState, command: &Command) -> anyhow::Result<i32> {
    match command {
        Command::Serve { .. } | Command::Openapi => Ok(0), // handled before the database opens
        Command::Migrate { runtime_role } => {
            if let Some(role) = runtime_role {
                state.db.grant_runtime(role).await?;
                println!("migrated; {role} may now serve (and not change the schema or the audit trail's history)");
            }
            Ok(0)
        }
        Command::User {
            command: UserCommand::Add { username, display_name, roles, departments, memberships, email, .. },
        } => {
            let new = NewUser {
                username: username.clone(),
                display_name: display_name.clone(),
                password: String::new(),
                roles: roles.clone(),
                departments: departments.clone(),
                memberships: memberships.clone(),
                email: email.clone().unwrap_or_default(),
            };
            add_user(state, new).await
        }
        Command::Token { command: TokenCommand::Create { name, departments } } => {
            create_token(state, name, departments).await
        }
        Command::Scim { command: ScimCommand::Token { command } } => scim_token(state, command).await,
        Command::Audit { command } => audit_command(state, command).await,
        Command::Backup { to } => backup(state, to).await,
        Command::Integration { command: IntegrationCommand::Check { workflow, url, secret_env, lang } } => {
            let options =
                services::conformance::CheckOptions { url: url.as_deref(), secret_env: secret_env.as_deref() };
            integration_check(state, workflow, options, lang.as_deref()).await
        }
        Command::Demo { command: DemoCommand::Load } => {
            match demo::load_if_empty(state).await? {
                Some(credentials) => print_demo_credentials(&credentials),
                None => println!("the database already has users; the demo was not loaded"),
            }
            Ok(0)
        }
        Command::Demo { command: DemoCommand::MarkDrill } => {
            services::drills::mark_database(state, Actor::system(SystemActor::CommandLine), "drill").await?;
            println!("this database is marked as a drill environment: drills may run on it");
            Ok(0)
        }
    }
}

/// `user add`: the password is read from standard input, so that it never stands in a shell's history.
async fn add_user(state: &AppState, mut new: NewUser) -> anyhow::Result<i32> {
    let mut password = String::new();
    std::io::stdin().read_to_string(&mut password)?;
    new.password = password.trim_end_matches(['\r', '\n']).to_string();
    let username = new.username.clone();
    match services::users::add(state, Actor::system(SystemActor::CommandLine), None, new).await {
        Ok(id) => {
            println!("user {username} added (id {id})");
            Ok(0)
        }
        Err(error) => {
            eprintln!("error: {error}");
            Ok(2)
        }
    }
}

/// `token create`: the token goes to standard output, alone, the only time it is shown.
async fn create_token(state: &AppState, name: &str, departments: &[String]) -> anyhow::Result<i32> {
    match services::api_clients::create(state, Actor::system(SystemActor::CommandLine), name, departments).await {
        Ok((id, token)) => {
            eprintln!("API client {name} created (id {id}). The token, shown only now:");
            println!("{token}");
            Ok(0)
        }
        Err(error) => {
            eprintln!("error: {error}");
            Ok(2)
        }
    }
}

/// `scim token create` prints the token alone on standard output, the only time it is shown; `revoke` ends it.
async fn scim_token(state: &AppState, command: &ScimTokenCommand) -> anyhow::Result<i32> {
    let actor = Actor::system(SystemActor::CommandLine);
    let done = match command {
        ScimTokenCommand::Create { name } => {
            services::api_clients::create_directory(state, actor, name).await.map(|(id, token)| {
                eprintln!("directory token {name} created (id {id}). The token, shown only now:");
                println!("{token}");
            })
        }
        ScimTokenCommand::Revoke { name } => services::api_clients::revoke_named(state, actor, name).await.map(|()| {
            println!("directory token {name} revoked");
        }),
    };
    match done {
        Ok(()) => Ok(0),
        Err(error) => {
            eprintln!("error: {error}");
            Ok(2)
        }
    }
}

async fn audit_command(state: &AppState, command: &AuditCommand) -> anyhow::Result<i32> {
    match command {
        verify @ AuditCommand::Verify { file: Some(_), .. } => verify_offline(verify),
        AuditCommand::Verify { file: None, public_key, checkpoints, witness } => {
            verify_online(state, public_key.as_deref(), checkpoints, witness.as_deref()).await
        }
        AuditCommand::StartMemory { file } => start_memory(state, file).await,
        AuditCommand::Resolve { history, by, reason } => resolve_alarm(state, *history, by, reason).await,
        AuditCommand::Keygen { file, replaces } => keygen(Some(state), file, replaces.as_deref()).await,
        AuditCommand::PublicKey { file } => public_key(file),
        AuditCommand::Export { format, from, to, department, actor, action, object_type, object_id, process_id } => {
            let filter = AuditFilter {
                from: *from,
                to: *to,
                department: department.clone(),
                actor: actor.clone(),
                action: action.clone(),
                object_type: object_type.clone(),
                object_id: object_id.clone(),
                process_id: process_id.clone(),
            };
            export_audit(state, filter, *format).await
        }
    }
}

/// `audit resolve`: ends the signer's alarm with the history found true.
async fn resolve_alarm(
    state: &AppState,
    history: domain::signer_alarm::TrueHistory,
    by: &str,
    reason: &str,
) -> anyhow::Result<i32> {
    match services::audit_memory::resolve(state, history, by, reason).await {
        Ok(signed) => {
            println!(
                "the audit signer's alarm is resolved ({} history found true); recorded in the trail",
                history.as_str()
            );
            if let Some(checkpoint) = signed {
                println!("checkpoint signed at event {}", checkpoint.seq);
            }
            Ok(0)
        }
        Err(contract::AppError::BadRequest(why)) => {
            eprintln!("not resolved: {why}");
            Ok(1)
        }
        Err(error) => Err(error.into()),
    }
}
/// `audit export`: the whole export to standard output, page by page.
async fn export_audit(state: &AppState, filter: AuditFilter, format: ExportFormat) -> anyhow::Result<i32> {
    let export =
        services::audit_trail::begin(state, Actor::system(SystemActor::CommandLine), None, filter, format).await?;
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let mut pages = std::pin::pin!(services::audit_trail::stream(state.clone(), export, None));
    while let Some(page) = futures::StreamExt::next(&mut pages).await {
        std::io::Write::write_all(&mut out, &page?)?;
    }
    std::io::Write::flush(&mut out)?;
    Ok(0)
}

/// `audit verify` against the database: the chain, and with a public key its signed checkpoints.
async fn verify_online(
    state: &AppState,
    public_key: Option<&Path>,
    checkpoints: &[std::path::PathBuf],
    witness: Option<&Path>,
) -> anyhow::Result<i32> {
    let witness = public_key.and_then(|_| witness_to_read(witness));
    let proof = proof_inputs(public_key, checkpoints, witness.as_deref())?
        .map(|(public_key, kept)| services::audit::Proof { public_key, kept });
    let asked = proof.is_some();
    match services::audit::verify_with(&state.db, proof).await? {
        Verification::Intact { events } => {
            println!("audit chain intact: {events} events");
            if !asked {
                let signed = services::audit_proof::count(state).await?;
                print_proof(None, signed);
            }
            Ok(0)
        }
        Verification::Proven { events, proof } => {
            println!("audit chain intact: {events} events");
            print_proof(Some(&proof), proof.matched);
            Ok(0)
        }
        Verification::Broken(broken) => {
            println!("audit chain broken at sequence number {}: {}", broken.seq, broken.problem);
            Ok(1)
        }
        Verification::Unproven(problem) => {
            println!(
                "audit chain does not match its signed checkpoints at sequence number {}: {problem}",
                problem.seq()
            );
            Ok(1)
        }
    }
}

/// A new signing key in a new file; with `replaces`, the statement naming the key it replaces is kept too.
pub async fn keygen(state: Option<&AppState>, file: &Path, replaces: Option<&Path>) -> anyhow::Result<i32> {
    // The old key is read before the new file exists, so that a wrong path leaves nothing behind.
    let old = match replaces {
        Some(path) => Some(old_key(path)?),
        None => None,
    };
    // The old key's memory carries over to the new one; an old key file without its memory is refused.
    let old_memory = match (&old, replaces) {
        (Some((_, Some(private))), Some(path)) => {
            let path = backend::audit_witness::path_for(path);
            let memory = Witness::open(&path, private)
                .map_err(|e| anyhow::anyhow!("{e}: the old key's memory carries over to the new key"))?;
            Some((path, memory.vouched().map(|(seq, hash)| (seq, hash.to_string()))))
        }
        _ => None,
    };
    let key = backend::audit_key::create(file).map_err(anyhow::Error::msg)?;
    let memory = backend::audit_witness::path_for(file);
    match (old, state) {
        (Some((public, private)), Some(state)) => {
            let vouched = old_memory.as_ref().and_then(|(_, vouched)| vouched.clone());
            let statement =
                services::audit_proof::record_succession(state, &key, &public, private.as_ref(), vouched).await?;
            println!("the new key names key {} as the one it replaces", public.key_id());
            match &old_memory {
                Some((old_path, _)) => {
                    Witness::carry_over(&memory, old_path, &statement).map_err(anyhow::Error::msg)?;
                    println!("the old key's memory carries over to {}", memory.display());
                }
                None => {
                    Witness::create(&memory).map_err(anyhow::Error::msg)?;
                    println!("only the old public key was given: the new key's memory starts empty");
                }
            }
        }
        _ => drop(Witness::create(&memory).map_err(anyhow::Error::msg)?),
    }
    eprintln!("audit signing key written to {} (key {})", file.display(), key.public().key_id());
    print!("{}", key.public().to_pem());
    Ok(0)
}

/// The key a new one replaces: its key file (then it signs the hand-over too) or its public key.
fn old_key(path: &Path) -> anyhow::Result<(PublicKey, Option<domain::audit_proof::AuditKey>)> {
    let text = std::fs::read_to_string(path)?;
    if text.contains("PUBLIC KEY") {
        return Ok((PublicKey::from_pem(&text).map_err(anyhow::Error::msg)?, None));
    }
    let key = backend::audit_key::load(path).map_err(anyhow::Error::msg)?;
    Ok((key.public(), Some(key)))
}

/// The signer's memory for a key made before it existed, from the newest checkpoint that key signed.
async fn start_memory(state: &AppState, file: &Path) -> anyhow::Result<i32> {
    let key = backend::audit_key::load(file).map_err(anyhow::Error::msg)?;
    let path = backend::audit_witness::path_for(file);
    match services::audit_memory::start_memory(state, &key, &path).await? {
        Some(seq) => println!("the signer's memory {} starts at the checkpoint of event {seq}", path.display()),
        None => println!("the signer's memory {} starts empty: this key has signed no checkpoint yet", path.display()),
    }
    Ok(0)
}

pub fn public_key(file: &Path) -> anyhow::Result<i32> {
    let key = backend::audit_key::load(file).map_err(anyhow::Error::msg)?;
    print!("{}", key.public().to_pem());
    Ok(0)
}

/// Printed once, to the terminal only (never to the log).
pub fn print_demo_credentials(credentials: &[DemoCredential]) {
    println!("\nDemo users (one-time passwords, shown only now):");
    println!("  {:<10} {:<10} {:<18} password", "sign-in", "roles", "name");
    for c in credentials {
        println!("  {:<10} {:<10} {:<18} {}", c.username, c.roles, c.display_name, c.password);
    }
    println!();
}

pub fn parse() -> Cli {
    Cli::parse()
}

/// An online copy of the SQLite database (services::backup), with the words for each outcome.
async fn backup(state: &AppState, to: &std::path::Path) -> anyhow::Result<i32> {
    let shown = to.display();
    Ok(match services::backup::write(state, to).await? {
        Backup::Written { bytes, audit_events } => {
            println!("backup written: {shown} ({bytes} bytes, audit chain intact: {audit_events} events)");
            0
        }
        Backup::TargetExists => {
            eprintln!("{shown} already exists: choose a new file (a backup never overwrites)");
            2
        }
        Backup::NotThisEngine => {
            eprintln!("backup is for the SQLite default; on PostgreSQL use pg_dump (docs/operations.md, Deployment)");
            2
        }
        Backup::CopyDoesNotVerify => {
            eprintln!("the copy's audit chain does not verify: do not rely on {shown}");
            1
        }
    })
}

/// Prints each expectation of the rerun endpoint's check, met or not, in the language of `LANG` (Japanese
/// unless it names another the app speaks).
async fn integration_check(
    state: &AppState,
    workflow: &str,
    options: services::conformance::CheckOptions<'_>,
    lang: Option<&str>,
) -> anyhow::Result<i32> {
    let actor = Actor::system(SystemActor::CommandLine);
    let checked = match services::conformance::check(state, actor, None, workflow, options).await {
        Ok(checked) => checked,
        Err(error) => {
            eprintln!("error: {error} (the secret: the workflow's variable, or --secret-env NAME)");
            return Ok(2);
        }
    };
    let l = words::locale_of_language(lang.map(str::to_string).or_else(|| std::env::var("LANG").ok()).as_deref());
    print!("{}", words::conformance::report_in(l, &checked));
    Ok(if checked.all_met() { 0 } else { 1 })
}
