//! `warden-admin`: operator commands (migrate, customers import, customers forget, policies
//! check, senders check, agents, operators).

mod agents;
mod operators;
mod senders;

use std::path::PathBuf;
use std::time::Duration;

use clap::{CommandFactory, Parser, Subcommand};
use warden_service::StartError;

const BINARY: &str = "warden-admin";

/// Warden's operator CLI. Reads the same environment as the services.
#[derive(Parser)]
#[command(name = BINARY, version)]
struct Args {
    /// Optional TOML config file; environment variables override it.
    #[arg(long, env = "WARDEN_CONFIG", global = true)]
    config: Option<PathBuf>,
    /// Print the effective settings (secrets redacted) and exit.
    #[arg(long)]
    print_config: bool,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// Create missing tables and (re)seed error codes, pricing and the policy file's policies.
    Migrate,
    /// Customer data.
    Customers {
        #[command(subcommand)]
        command: CustomersCommand,
    },
    /// Policy files.
    Policies {
        #[command(subcommand)]
        command: PoliciesCommand,
    },
    /// Senders files: the numbers and businesses a deployment speaks for (SENDERS_PATH).
    Senders {
        #[command(subcommand)]
        command: senders::SendersCommand,
    },
    /// Remote agents: API keys, scopes and guardrails of the HTTP gateway's callers.
    Agents {
        #[command(subcommand)]
        command: agents::AgentsCommand,
    },
    /// Operators of the console (`console`): who may log in, with which role.
    Operators {
        #[command(subcommand)]
        command: operators::OperatorsCommand,
    },
}

#[derive(Subcommand)]
enum CustomersCommand {
    /// Upsert customers from a CSV (header customer_id,opt_in_marketing,opt_in_utility,tags,engagement_score)
    /// or JSON lines (.jsonl) file. Bad rows are reported as `line N: reason` and skipped.
    Import {
        /// The file to import.
        file: PathBuf,
    },
    /// Forget a customer: erase the content of their messages and their profile, keep a
    /// suppression so every later send to the number answers USER_OPTED_OUT, and audit it.
    Forget {
        /// The customer's phone number with country code.
        phone: String,
    },
}

#[derive(Subcommand)]
enum PoliciesCommand {
    /// Validate a policy file without touching the database; prints the policies it defines.
    Check {
        /// The policy file (YAML).
        file: PathBuf,
    },
}

/// A bad command-line argument (exit code 2).
#[derive(Debug)]
struct PhoneArg(String);

impl std::fmt::Display for PhoneArg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for PhoneArg {}

#[tokio::main]
async fn main() {
    if let Err(e) = run(Args::parse()).await {
        let code = e.failure().exit_code();
        warden_service::report(BINARY, code, &e);
        std::process::exit(code);
    }
}

async fn run(args: Args) -> Result<(), StartError> {
    if let Some(Command::Policies {
        command: PoliciesCommand::Check { file },
    }) = &args.command
    {
        // Needs no settings or database: usable in CI on a policy change alone.
        let (_, seeds) = warden_service::policies::load(file).map_err(StartError::config)?;
        for seed in &seeds {
            let state = if seed.enabled { "enabled" } else { "disabled" };
            eprintln!("{}: {} ({state})", seed.id, seed.policy_type);
        }
        eprintln!("{}: {} policies, valid", file.display(), seeds.len());
        return Ok(());
    }
    if let Some(Command::Senders { command }) = &args.command {
        // Needs no settings or database; the variables it names are read from here.
        let code = senders::run(command);
        if code != 0 {
            std::process::exit(code);
        }
        return Ok(());
    }
    let settings = warden_service::load_settings(args.config.as_deref())?;
    if args.print_config {
        print!("{}", settings.print_config());
        return Ok(());
    }
    let Some(command) = args.command else {
        Args::command()
            .error(
                clap::error::ErrorKind::MissingSubcommand,
                "a subcommand is required",
            )
            .exit();
    };
    let _telemetry = warden_service::telemetry(BINARY, &settings)?;
    match command {
        Command::Migrate => {
            let (_, seeds, _) = warden_service::policies::load_configured(
                &settings.policies_path,
                settings.policies_path_set,
            )
            .map_err(StartError::Policies)?;
            let card = warden_core::account::rate_card::load(settings.pricing_path.as_deref())
                .map_err(StartError::Pricing)?;
            let report = warden_store::prepare_with_card(&settings.database, seeds, card).await?;
            eprintln!(
                "database {} is up to date: {} migrations applied now, {} error codes, {} pricing rows, {} policies",
                settings.database.display_target(),
                report.migrations_applied,
                report.error_codes,
                report.pricing_rows,
                report.policies
            );
        }
        Command::Customers {
            command: CustomersCommand::Import { file },
        } => {
            let deps = database_only(settings).await?;
            let mut conn = deps
                .pg
                .dedicated_connection()
                .await
                .map_err(|e| anyhow::anyhow!("postgres: {e}"))?;
            let mut stderr = std::io::stderr();
            let summary = warden_import::import_file(&mut conn, &file, &mut stderr)
                .await
                .map_err(|e| anyhow::anyhow!("{}: {e}", file.display()))?;
            eprintln!("{}: {summary}", file.display());
            // Let the pool close its connections before exit.
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        Command::Customers {
            command: CustomersCommand::Forget { phone },
        } => {
            let phone = warden_rules::phone::canonicalize(&phone)
                .map_err(|e| StartError::config(PhoneArg(format!("PHONE: {e}"))))?;
            let deps = database_only(settings.clone()).await?;
            let forgotten = warden_core::customers::privacy::forget(&deps.pg, &phone, BINARY)
                .await
                .map_err(|e| anyhow::anyhow!("postgres: {e}"))?;
            eprintln!(
                "customer {} forgotten: content of {} messages erased, profile cleared, number suppressed{}",
                phone.digits(),
                forgotten.messages_redacted,
                if forgotten.already_suppressed {
                    " (it already was)"
                } else {
                    ""
                }
            );
            // Gateways showing this conversation to an agent read it again. Best effort: the
            // erasure is committed either way, and their next read shows it.
            let told = async {
                let within = Duration::from_secs(3);
                let hints = warden_stream::Hints::connect(&settings, within).await?;
                hints
                    .publish_all([(phone.digits(), None)], warden_stream::HintKind::Redacted)
                    .await;
                hints.flush(within).await
            };
            match told.await {
                Ok(()) => eprintln!("live subscribers of this conversation were told"),
                Err(e) => eprintln!(
                    "live subscribers were not told ({e}); their next read of the conversation shows the erasure"
                ),
            }
        }
        Command::Agents { command } => {
            let senders = settings.senders().into_owned();
            let deps = database_only(settings).await?;
            agents::run(&deps.pg, &senders, command, BINARY).await?;
            // Let the pool close its connections before exit.
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        Command::Operators { command } => {
            let deps = database_only(settings).await?;
            operators::run(&deps.pg, command, BINARY).await?;
            // Let the pool close its connections before exit.
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        Command::Policies { .. } | Command::Senders { .. } => {
            unreachable!("handled before settings are loaded")
        }
    }
    Ok(())
}

/// Start-up for the commands that need only Postgres (one connection).
async fn database_only(
    settings: std::sync::Arc<warden_service::Settings>,
) -> Result<warden_service::Dependencies, StartError> {
    warden_service::start(
        settings,
        warden_service::Needs {
            redis: false,
            nats: false,
            pool_size: 1,
        },
    )
    .await
}
