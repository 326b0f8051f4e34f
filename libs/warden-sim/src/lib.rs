//! platform-sim: an in-memory stand-in for the messaging platform API (served under any `/vNN.0/` version prefix).
//!
//! It answers at the real paths with the real bodies (sends, templates, phone
//! numbers), checks the bearer token, sends signed webhooks (statuses, inbound
//! messages, template decisions) to `SIM_WEBHOOK_URL`, and adds control endpoints
//! under `/sim` for faults, counters and scripted events. It serves one number, or
//! several numbers of several business accounts (`SIM_SENDERS`, see [`senders`]), each
//! with its own token, secret, templates, throughput and quality. It never touches Warden's
//! database, cache or stream: all state is in memory.
//!
//! ```no_run
//! # async fn demo() -> Result<(), warden_sim::SimError> {
//! let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
//! let sim = warden_sim::start(warden_sim::SimConfig::default(), listener)?;
//! println!("sim at {}", sim.base_url());
//! sim.wait().await?;
//! # Ok(()) }
//! ```

mod account;
pub mod bodies;
pub mod calls;
pub mod commerce;
pub mod config;
pub mod contacts;
pub mod flow_checks;
pub mod flows;
pub mod http;
pub mod limits;
pub mod listen;
pub mod marketing;
pub mod media;
pub mod reply;
pub mod routing;
pub mod senders;
pub mod state;
mod template_api;
pub mod templates;
pub mod users;
pub mod webhooks;

pub use config::SimConfig;
pub use state::Sim;

use actix_web::dev::{Server, ServerHandle};
use actix_web::{App, HttpServer, web};
use std::net::{SocketAddr, TcpListener};
use std::sync::Arc;
use warden_platform::signature::Signer;
use webhooks::{Origin, Sender, WebhookQueue};

#[derive(Debug, thiserror::Error)]
pub enum SimError {
    #[error(transparent)]
    Templates(#[from] templates::TemplateFileError),
    #[error(transparent)]
    Senders(#[from] senders::SendersFileError),
    #[error("cannot listen: {0}")]
    Io(#[from] std::io::Error),
    #[error("platform-sim must be started inside a tokio runtime")]
    NoRuntime,
}

/// A started sim. The HTTP server only serves while [`RunningSim::wait`] is polled
/// (await it, or `tokio::spawn` it).
pub struct RunningSim {
    addr: SocketAddr,
    server: Server,
    sim: Arc<Sim>,
    sender: Option<tokio::task::JoinHandle<()>>,
}

impl RunningSim {
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://<addr>`, with 127.0.0.1 for a wildcard bind.
    pub fn base_url(&self) -> String {
        let host = if self.addr.ip().is_unspecified() {
            "127.0.0.1".to_owned()
        } else {
            self.addr.ip().to_string()
        };
        format!("http://{host}:{}", self.addr.port())
    }

    /// Handle to stop the server (`handle.stop(true).await`).
    pub fn handle(&self) -> ServerHandle {
        self.server.handle()
    }

    /// The shared state, for in-process inspection (benchmarks, tests).
    pub fn state(&self) -> Arc<Sim> {
        Arc::clone(&self.sim)
    }

    /// Serves until the server stops (SIGINT/SIGTERM or [`ServerHandle::stop`]).
    /// Webhooks still queued at that point are dropped: the sim keeps no state.
    pub async fn wait(self) -> std::io::Result<()> {
        let result = self.server.await;
        if let Some(task) = self.sender {
            task.abort();
        }
        result
    }
}

/// Builds the sim on `listener`. Must be called inside a tokio runtime: the webhook
/// sender and approval timers run on it, the HTTP workers on their own threads.
pub fn start(config: SimConfig, listener: TcpListener) -> Result<RunningSim, SimError> {
    let runtime = tokio::runtime::Handle::try_current().map_err(|_| SimError::NoRuntime)?;
    // reqwest (webhook sender) needs a rustls provider even for plain http URLs; an
    // Err only means the binary installed one already.
    if rustls::crypto::CryptoProvider::get_default().is_none() {
        let _ = rustls::crypto::ring::default_provider().install_default();
    }
    let (seeds, origin) = templates::load_initial(config.templates.as_deref())?;
    let specs = senders::from_config(&config)?;
    let addr = listener.local_addr()?;

    let queue = config
        .webhook_target()
        .map(|_| Arc::new(WebhookQueue::new(config.webhook_queue)));
    let sim = Arc::new(Sim::new(
        config.clone(),
        specs,
        seeds,
        queue.clone(),
        runtime.clone(),
    ));
    let sender = match (queue, config.webhook_target()) {
        (Some(queue), Some(url)) => Some(
            runtime.spawn(
                Sender {
                    queue,
                    url: url.to_owned(),
                    origins: sim
                        .numbers
                        .all()
                        .iter()
                        .map(|n| Origin {
                            waba_id: n.waba_id().to_owned(),
                            signer: Signer::new(n.spec.app_secret.as_bytes()),
                        })
                        .collect(),
                    batch: config.webhook_batch,
                    retry_for: config.webhook_retry_for,
                }
                .run(),
            ),
        ),
        _ => None,
    };

    let data = web::Data::from(Arc::clone(&sim));
    let mut server =
        HttpServer::new(move || App::new().app_data(data.clone()).configure(http::routes))
            .listen(listener)?;
    if config.workers > 0 {
        server = server.workers(config.workers);
    }
    let server = server.shutdown_timeout(5).run();

    let templates = sim.templates.read().map(|r| r.len()).unwrap_or(0);
    tracing::info!(
        %addr,
        templates,
        templates_from = %origin,
        webhook_url = config.webhook_target().unwrap_or("(none)"),
        phone_number_id = %sim.numbers.first().id(),
        waba_id = %sim.first_waba(),
        numbers = %sim.numbers.ids(),
        approval_delay_ms = config.approval_delay.as_millis() as u64,
        "platform-sim listening"
    );
    Ok(RunningSim {
        addr,
        server,
        sim,
        sender,
    })
}

/// Starts the sim on `listener` and serves until it is stopped.
pub async fn run(config: SimConfig, listener: TcpListener) -> Result<(), SimError> {
    start(config, listener)?.wait().await?;
    Ok(())
}
