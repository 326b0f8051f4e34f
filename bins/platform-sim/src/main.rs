//! platform-sim: local stand-in for the upstream platform (see warden-sim).

use clap::Parser;
use std::net::TcpListener;
use std::process::ExitCode;
use warden_sim::SimConfig;

/// platform-sim: a local, in-memory stand-in for the messaging platform API (served under any `/vNN.0/` version prefix).
#[derive(Parser)]
#[command(name = "platform-sim", version, about, long_about = None)]
struct Args {
    #[command(flatten)]
    config: SimConfig,
    /// Print the effective settings (secrets redacted) and exit.
    #[arg(long)]
    print_config: bool,
}

fn main() -> ExitCode {
    let Args {
        config,
        print_config,
    } = Args::parse();
    if print_config {
        print!("{}", config.print_config());
        return ExitCode::SUCCESS;
    }
    init_logging();
    // One crypto provider for every rustls user in the process (reqwest needs it).
    let _ = rustls::crypto::ring::default_provider().install_default();

    let addr = (config.http_host.as_str(), config.http_port);
    let listener = match TcpListener::bind(addr) {
        Ok(l) => l,
        Err(e) => {
            eprintln!(
                "platform-sim: cannot listen on {}:{}: {e}",
                config.http_host, config.http_port
            );
            return ExitCode::FAILURE;
        }
    };
    // actix's own runtime: it stops the server cleanly on SIGINT/SIGTERM.
    match actix_web::rt::System::new().block_on(warden_sim::run(config, listener)) {
        Ok(()) => {
            tracing::info!("platform-sim stopped");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("platform-sim: {e}");
            ExitCode::FAILURE
        }
    }
}

/// JSON logs on stderr; RUST_LOG filters (default info). Kept in one place so it can
/// be swapped for the shared telemetry init.
fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    tracing_subscriber::fmt()
        .json()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();
}
