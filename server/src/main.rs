use server::cli::{self, Command};
use server::{startup, telemetry};

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    telemetry::init();
    // At least two workers even on one CPU: Leptos' streaming SSR can stall on a single worker (leptos-rs/leptos#4647).
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get().max(2));
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(workers).enable_all().build();
    let outcome = match runtime {
        Ok(runtime) => runtime.block_on(run()),
        Err(error) => Err(error.into()),
    };
    match outcome {
        Ok(code) => std::process::exit(code),
        Err(error) => {
            eprintln!("error: {error:#}");
            std::process::exit(1);
        }
    }
}

async fn run() -> anyhow::Result<i32> {
    let cli = cli::parse();
    // Offline: no database.
    match &cli.command {
        Some(Command::Audit { command: verify @ cli::AuditCommand::Verify { file: Some(_), .. } }) => {
            return cli::verify_offline(verify);
        }
        Some(Command::Audit { command: cli::AuditCommand::PublicKey { file } }) => return cli::public_key(file),
        Some(Command::Openapi) => {
            println!("{}", serde_json::to_string_pretty(&server::api::document())?);
            return Ok(0);
        }
        Some(Command::Audit { command: cli::AuditCommand::Keygen { file, replaces: None } }) => {
            return cli::keygen(None, file, None).await;
        }
        _ => {}
    }
    let options = startup::leptos_options()?;
    if matches!(cli.command, None | Some(Command::Serve { .. })) {
        startup::check_site(&options)?;
    }
    let mut server = cli.server_options(options.site_addr)?;
    server.demo_systems = matches!(cli.command, Some(Command::Serve { demo: true, .. }));
    // Verifying the trail only reads: it must not change the database it checks (no migrations).
    let db = match &cli.command {
        Some(Command::Audit { command: cli::AuditCommand::Verify { .. } }) => {
            backend::Db::connect(&cli.database_url).await?
        }
        _ => startup::open_database_as(&cli.database_url, cli.migrate_url.as_deref(), &server.pools).await?,
    };
    let config = startup::load_config(cli.config.as_deref())?;
    let state = startup::system_state(db, server, config).await?;
    let (demo, sweep_seconds) = match &cli.command {
        None => (false, 15),
        Some(Command::Serve { demo, sweep_seconds }) => (*demo, (*sweep_seconds).max(1)),
        Some(other) => return cli::run_command(&state, other).await,
    };
    // A lease shorter than the work it covers would hand a rerun to a second dispatcher mid-send.
    backend::services::dispatcher::check_lease(&state).map_err(anyhow::Error::msg)?;
    let addr = options.site_addr;
    if demo {
        if !addr.ip().is_loopback() {
            anyhow::bail!("demo mode only serves on a loopback address (LEPTOS_SITE_ADDR is {addr})");
        }
        if let Some(credentials) = backend::demo::load_if_empty(&state).await? {
            cli::print_demo_credentials(&credentials);
        }
    }
    startup::warn_of_gaps(&state);
    startup::spawn_housekeeping(state.clone());
    startup::spawn_board_count_folding(state.clone());
    startup::spawn_threshold_checks(state.clone());
    let dispatcher = startup::spawn_dispatcher(state.clone());
    startup::spawn_sweeper(state.clone(), std::time::Duration::from_secs(sweep_seconds));
    startup::spawn_stage_checks(state.clone());
    // A restart after the newest events were removed raises the alarm now, not at the next checkpoint.
    if let Err(error) = backend::services::audit_proof::check_memory(&state).await {
        tracing::error!(%error, "checking the audit signer's memory failed");
    }
    startup::spawn_checkpoints(state.clone());
    startup::spawn_tree_follower(state.clone());
    // The audit page shows the last check's result: the first is done before the first page.
    if let Err(error) = backend::services::audit_trail::check_chain(&state).await {
        tracing::error!(%error, "checking the audit chain failed");
    }
    startup::spawn_chain_checks(state.clone());
    let listener = tokio::net::TcpListener::bind(addr).await?;
    tracing::info!(%addr, engine = state.db.engine(), public_url = %state.server.public_url,
        config = %state.config.source, "serving");
    println!("Rerun Gate is serving on http://{addr}");
    startup::serve(listener, startup::router(state.clone(), options)).await?;
    startup::finish_dispatching(&state, dispatcher).await;
    // The last events of this run get their checkpoint before the process ends.
    if let Err(error) = backend::services::audit_proof::checkpoint_head(&state).await {
        tracing::error!(%error, "no checkpoint signed at shutdown");
    }
    state.close().await;
    Ok(0)
}
