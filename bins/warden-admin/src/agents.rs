//! `warden-admin agents ...`: flags in, one `warden_core::agents` call, a line out.

use clap::{Args, Subcommand};
use warden_core::agents::{self, AgentError, AgentStatus, AgentUpdate, AgentView, Guardrails};
use warden_service::StartError;
use warden_settings::Senders;
use warden_store::PgPool;

#[derive(Subcommand)]
pub enum AgentsCommand {
    /// Create an agent and print its API key (shown this once; only a salted hash is kept).
    Create {
        /// The agent's name (recorded as the actor of everything it does).
        name: String,
        /// Comma-separated scopes: read, send, schedule, campaigns, templates, admin.
        #[arg(long)]
        scopes: String,
        #[command(flatten)]
        limits: Limits,
    },
    /// List agents (name, key id, status, scopes, guardrails, senders); never the keys.
    List,
    /// Show one agent (as `list` does).
    Show { name: String },
    /// Change an agent's scopes or guardrails (a limit of `none` removes it).
    Update {
        name: String,
        /// Comma-separated scopes, replacing the current ones.
        #[arg(long)]
        scopes: Option<String>,
        #[command(flatten)]
        limits: Limits,
    },
    /// Refuse the agent's key until `resume` (within a second on every gateway).
    Suspend { name: String },
    /// Accept a suspended agent's key again.
    Resume { name: String },
    /// Refuse the agent's key for good (its history stays attributed to it).
    Revoke { name: String },
}

#[derive(Args)]
pub struct Limits {
    /// Sends accepted per calendar minute (a number, or `none`).
    #[arg(long)]
    max_sends_per_minute: Option<String>,
    /// Marketing messages accepted per UTC day (a number, or `none`).
    #[arg(long)]
    max_marketing_per_day: Option<String>,
    /// Comma-separated categories the agent may send: marketing, utility, authentication,
    /// service (or `none` for every category).
    #[arg(long)]
    allowed_message_types: Option<String>,
    /// Comma-separated ids of the senders file (SENDERS_PATH) the agent may send from and
    /// read (or `all`, the default).
    #[arg(long)]
    senders: Option<String>,
}

impl Limits {
    fn parse(&self, senders: &Senders) -> Result<AgentUpdate, AgentError> {
        let limit = |flag: &str, v: &Option<String>| {
            v.as_deref()
                .map(|v| agents::parse_limit(flag, v))
                .transpose()
        };
        let types = match self.allowed_message_types.as_deref() {
            None => None,
            Some(v) if v.eq_ignore_ascii_case("none") => Some(None),
            Some(v) => Some(Some(agents::parse_message_types(v)?)),
        };
        Ok(AgentUpdate {
            scopes: None,
            max_sends_per_minute: limit("--max-sends-per-minute", &self.max_sends_per_minute)?,
            max_marketing_per_day: limit("--max-marketing-per-day", &self.max_marketing_per_day)?,
            allowed_message_types: types,
            senders: self
                .senders
                .as_deref()
                .map(|v| agents::parse_senders(v, senders))
                .transpose()?,
        })
    }
}

fn fail(e: AgentError) -> StartError {
    match e {
        AgentError::Core(e) => StartError::Failed(anyhow::anyhow!("postgres: {e}")),
        other => StartError::config(other),
    }
}

fn describe(a: &AgentView) -> String {
    let g = &a.guardrails;
    let limit = |v: Option<i32>| v.map_or("-".to_string(), |n| n.to_string());
    let types = g
        .allowed_message_types
        .as_ref()
        .map_or("all".to_string(), |t| {
            t.iter().map(|c| c.as_str()).collect::<Vec<_>>().join(",")
        });
    let senders = g
        .senders
        .as_ref()
        .map_or("all".to_string(), |s| s.join(","));
    format!(
        "{}\t{}\t{}\t{}\tsends/min={}\tmarketing/day={}\ttypes={}\tsenders={}",
        a.name,
        a.key_id,
        a.status.as_str(),
        a.scopes.join(","),
        limit(g.max_sends_per_minute),
        limit(g.max_marketing_per_day),
        types,
        senders
    )
}

/// `senders`: the deployment's senders (the settings' senders file), which `--senders`
/// names.
pub async fn run(
    pg: &PgPool,
    senders: &Senders,
    command: AgentsCommand,
    actor: &str,
) -> Result<(), StartError> {
    match command {
        AgentsCommand::Create {
            name,
            scopes,
            limits,
        } => {
            let scopes = agents::parse_scopes(&scopes).map_err(fail)?;
            let l = limits.parse(senders).map_err(fail)?;
            let guardrails = Guardrails {
                max_sends_per_minute: l.max_sends_per_minute.flatten(),
                max_marketing_per_day: l.max_marketing_per_day.flatten(),
                allowed_message_types: l.allowed_message_types.flatten(),
                senders: l.senders.flatten(),
            };
            let created = agents::create(pg, &name, scopes, guardrails, actor)
                .await
                .map_err(fail)?;
            eprintln!(
                "agent {} created; its API key follows (shown once, store it now):",
                describe(&created.agent)
            );
            // The key alone on stdout, so it can be piped into a secret store.
            println!("{}", created.key);
        }
        AgentsCommand::List => {
            let all = agents::list(pg).await.map_err(fail)?;
            println!("name\tkey_id\tstatus\tscopes\tguardrails");
            for a in &all {
                println!("{}", describe(a));
            }
        }
        AgentsCommand::Show { name } => match agents::find(pg, &name).await.map_err(fail)? {
            Some(a) => {
                println!("name\tkey_id\tstatus\tscopes\tguardrails");
                println!("{}", describe(&a));
            }
            None => return Err(fail(AgentError::NotFound(name))),
        },
        AgentsCommand::Update {
            name,
            scopes,
            limits,
        } => {
            let mut change = limits.parse(senders).map_err(fail)?;
            change.scopes = scopes
                .as_deref()
                .map(agents::parse_scopes)
                .transpose()
                .map_err(fail)?;
            let view = agents::update(pg, &name, change, actor)
                .await
                .map_err(fail)?;
            eprintln!("agent updated: {}", describe(&view));
        }
        AgentsCommand::Suspend { name } => status(pg, &name, AgentStatus::Suspended, actor).await?,
        AgentsCommand::Resume { name } => status(pg, &name, AgentStatus::Active, actor).await?,
        AgentsCommand::Revoke { name } => status(pg, &name, AgentStatus::Revoked, actor).await?,
    }
    Ok(())
}

async fn status(pg: &PgPool, name: &str, to: AgentStatus, actor: &str) -> Result<(), StartError> {
    let view = agents::set_status(pg, name, to, actor)
        .await
        .map_err(fail)?;
    eprintln!("agent {} is now {}", view.name, view.status.as_str());
    Ok(())
}
