//! The whole pipeline in process: the gateway (an rmcp client over a duplex pipe), a
//! dispatcher, the webhook server, and a platform-sim that posts its signed webhooks to
//! that server, on a database and stream of their own. It derefs to the [`Harness`] it
//! extends, so the tool-calling helpers are the harness's.

use std::net::TcpListener;
use std::sync::Arc;
use std::time::Duration;

use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use uuid::Uuid;
use warden_gateway::Gateway;
use warden_settings::Settings;
use warden_sim::users::SimUser;

use super::{ACCESS_TOKEN, APP_SECRET, Harness, Opts, PHONE_NUMBER_ID, WABA_ID};

pub struct Stack {
    harness: Harness,
    pub sim: Arc<warden_sim::Sim>,
    pub sim_url: String,
    pub http: reqwest::Client,
    _stop: tokio::sync::oneshot::Sender<()>,
}

impl Stack {
    /// Start everything (the webhook server and the sim share the test account's app
    /// secret); `adjust` changes the settings before anything starts.
    pub async fn start(adjust: impl FnOnce(&mut Settings)) -> Stack {
        Self::start_on(adjust, None).await
    }

    /// [`Stack::start`] with the sim serving the numbers of `sim_senders` (a `SIM_SENDERS`
    /// file); `adjust` gives Warden the matching senders file.
    pub async fn start_on(
        adjust: impl FnOnce(&mut Settings),
        sim_senders: Option<std::path::PathBuf>,
    ) -> Stack {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let db = super::prepared_db().await;
        let mut settings = super::settings_for(&db, &Opts::default()).await;
        adjust(&mut settings);

        // The webhook server's address first: the sim needs its URL, and the webhook server
        // (which reads the numbers from the platform at start) the sim's.
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let webhook_url = format!("http://{}/webhook", listener.local_addr().unwrap());

        let config = warden_sim::SimConfig {
            http_host: "127.0.0.1".into(),
            http_port: 0,
            webhook_url: Some(webhook_url),
            app_secret: APP_SECRET.into(),
            access_token: ACCESS_TOKEN.into(),
            phone_number_id: PHONE_NUMBER_ID.into(),
            waba_id: WABA_ID.into(),
            approval_delay: Duration::from_secs(3600),
            workers: 1,
            senders: sim_senders,
            ..warden_sim::SimConfig::default()
        };
        let running =
            warden_sim::start(config, TcpListener::bind("127.0.0.1:0").unwrap()).expect("sim");
        let sim_url = running.base_url();
        let sim = running.state();
        tokio::spawn(running.wait());
        settings.platform.api_url = sim_url.clone();

        let webhook_deps = super::deps_for(settings.clone(), true).await;
        let state = warden_webhook::AppState::new(warden_core::Core::new(webhook_deps, "webhook"))
            .expect("secret set");
        tokio::spawn(warden_webhook::server(listener, state).unwrap());

        let deps = super::deps_for(settings.clone(), true).await;
        let mut config = warden_dispatcher::DispatcherConfig::defaults(&settings);
        config.bucket_channel = Some(format!("t-{}", Uuid::new_v4().simple()));
        config.dispatch.pair_interval = Duration::ZERO;
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        warden_dispatcher::start(deps.clone(), config, async move {
            let _ = rx.await;
        })
        .await
        .expect("dispatcher starts");
        let client = super::connect(Gateway::new(deps.clone()).expect("gateway")).await;
        Stack {
            harness: Harness {
                _db: db,
                deps,
                client,
                sim: None,
                stream: None,
            },
            sim,
            sim_url,
            http: reqwest::Client::new(),
            _stop: tx,
        }
    }
}

impl Stack {
    /// A user's text through the sim's signed webhook, waited for until the webhook server
    /// stored it: its message_id and the customer key it was stored under.
    pub async fn inbound_text(&self, user: SimUser, text: &str) -> (Uuid, String) {
        let (wamid, queued) = self.sim.inbound(user, text.into(), None, None, None);
        assert!(queued, "the sim has a webhook target");
        warden_test_support::wait::until_some(
            Duration::from_secs(15),
            "inbound message stored",
            || async {
                use warden_store::schema::messages;
                let mut c = self.deps.pg.get().await.unwrap();
                messages::table
                    .filter(messages::wamid.eq(&wamid))
                    .select((messages::id, messages::customer_phone))
                    .first(&mut c)
                    .await
                    .optional()
                    .unwrap()
            },
        )
        .await
    }
}

impl std::ops::Deref for Stack {
    type Target = Harness;
    fn deref(&self) -> &Harness {
        &self.harness
    }
}
