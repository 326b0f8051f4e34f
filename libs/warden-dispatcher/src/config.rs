//! The dispatcher's run-time configuration: its knobs come from the settings tree
//! (`warden_settings::Dispatch`, validated when the process loads its settings), plus what
//! only a running replica has (its owner id, the consumer name).

use std::collections::BTreeMap;
use std::time::Duration;

use warden_settings::{Dispatch, Settings};

/// Environment variables the dispatcher reads besides the shared settings.
pub use warden_settings::DISPATCH_VARIABLES as VARIABLES;

/// A claim outlives its platform call by at least this much (claim to call, recording).
pub const LEASE_MARGIN: Duration = Duration::from_secs(5);

/// The durable consumer every replica shares.
pub const CONSUMER_NAME: &str = "dispatcher";

#[derive(Clone, Debug)]
pub struct DispatcherConfig {
    /// The default sender's starting bucket capacity and refill per second (its `mps` in
    /// the senders file, else RATE_LIMIT_MPS), until the platform says what its number's
    /// throughput is.
    pub mps: u32,
    /// The same for every other sender, by the stored key of its messages: its `mps`,
    /// else RATE_LIMIT_MPS. A message of a sender missing here goes out as the default
    /// sender and takes the default sender's tokens.
    pub sender_mps: BTreeMap<String, u32>,
    /// The knobs of the settings tree (`DISPATCH_*`, `PLATFORM_TIMEOUT`, ...).
    pub dispatch: Dispatch,
    /// The bucket's channel; `None` is the service's channel (`whatsapp`). Tests use a
    /// private one so they do not share a bucket.
    pub bucket_channel: Option<String>,
    /// Durable consumer name (the same for every replica).
    pub consumer: String,
    /// This replica's id, written as `lease_owner`.
    pub owner: String,
}

impl DispatcherConfig {
    /// The documented defaults with RATE_LIMIT_MPS from `settings` (tests start here).
    pub fn defaults(settings: &Settings) -> Self {
        Self::with(settings, Dispatch::default())
    }

    /// The knobs `settings` carries (defaults, config file, environment).
    pub fn from_settings(settings: &Settings) -> Self {
        Self::with(settings, settings.dispatch.clone())
    }

    fn with(settings: &Settings, dispatch: Dispatch) -> Self {
        let senders = settings.senders();
        let sender_mps = senders
            .all()
            .iter()
            .filter(|s| !s.default)
            .map(|s| {
                (
                    senders.key_of(s).sender,
                    s.mps.unwrap_or(settings.rate_limit_mps),
                )
            })
            .collect();
        Self {
            mps: settings.configured_mps().0,
            sender_mps,
            dispatch,
            bucket_channel: None,
            consumer: CONSUMER_NAME.to_owned(),
            owner: default_owner(settings.hostname.as_deref()),
        }
    }

    /// The lease a claim takes: DISPATCH_LEASE, but never shorter than a whole platform
    /// call plus [`LEASE_MARGIN`]. A lease that ended while its call was still running
    /// would let the call's row be taken for a dead claim and resent beside it.
    pub fn claim_lease(&self) -> Duration {
        self.dispatch
            .lease
            .max(self.dispatch.platform_timeout + LEASE_MARGIN)
    }

    /// How dead claims are settled: the rule lives in the core
    /// (`warden_core::delivery::next_step`), these settings parametrise it.
    pub fn unknown_outcome(&self) -> warden_core::delivery::UnknownOutcome {
        warden_core::delivery::UnknownOutcome {
            settle: self.dispatch.unknown_settle,
            max_wait: self.dispatch.unknown_max_wait,
        }
    }

    /// The starting rate of the sender stored as `sender` (the default sender's for a
    /// sender missing from the senders file).
    pub fn mps_of(&self, sender: &str) -> u32 {
        self.sender_mps.get(sender).copied().unwrap_or(self.mps)
    }

    /// The channel whose buckets this dispatcher takes tokens from.
    pub fn bucket_channel(&self) -> &str {
        self.bucket_channel
            .as_deref()
            .unwrap_or(warden_settings::DEFAULT_CHANNEL)
    }
}

/// `<host>-<pid>-<random>`: unique per process, readable in `lease_owner`.
fn default_owner(hostname: Option<&str>) -> String {
    let host = hostname
        .map(str::to_owned)
        .or_else(|| {
            std::fs::read_to_string("/proc/sys/kernel/hostname")
                .ok()
                .map(|h| h.trim().to_owned())
        })
        .unwrap_or_else(|| "dispatcher".to_owned());
    format!(
        "{host}-{}-{:04x}",
        std::process::id(),
        rand::random::<u16>()
    )
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    fn config(pairs: &[(&str, &str)]) -> DispatcherConfig {
        let env: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        DispatcherConfig::from_settings(&Settings::from_sources(None, &env).unwrap())
    }

    #[test]
    fn defaults_follow_the_brief() {
        let c = config(&[]);
        assert_eq!(c.mps, 80);
        assert_eq!(c.dispatch.replicas, 1);
        assert_eq!(c.dispatch.pair_interval, Duration::from_secs(6));
        assert_eq!(c.dispatch.max_attempts, 8);
        assert_eq!(c.dispatch.ack_wait, Duration::from_secs(30));
        assert_eq!(c.consumer, "dispatcher");
        assert_eq!(c.bucket_channel(), "whatsapp");
        assert!(!c.owner.is_empty());
        assert_eq!(c.dispatch.sweep_interval, Duration::from_secs(5));
    }

    #[test]
    fn a_claim_always_outlives_its_call() {
        let c = config(&[("DISPATCH_LEASE", "2s"), ("PLATFORM_TIMEOUT", "10s")]);
        assert_eq!(c.claim_lease(), Duration::from_secs(15));
        let c = config(&[("DISPATCH_LEASE", "90s")]);
        assert_eq!(c.claim_lease(), Duration::from_secs(90));
    }

    #[test]
    fn overrides_come_from_the_settings_tree() {
        let c = config(&[
            ("PAIR_RATE_INTERVAL", "0"),
            ("DISPATCH_MAX_ATTEMPTS", "3"),
            ("DISPATCHER_REPLICAS", "2"),
            ("DISPATCH_BACKOFF_BASE", "100ms"),
            ("HOSTNAME", "node-7"),
        ]);
        assert_eq!(c.dispatch.pair_interval, Duration::ZERO);
        assert_eq!(c.dispatch.max_attempts, 3);
        assert_eq!(c.dispatch.replicas, 2);
        assert_eq!(c.dispatch.backoff_base, Duration::from_millis(100));
        assert!(c.owner.starts_with("node-7-"), "{}", c.owner);
    }

    #[test]
    fn each_sender_starts_at_its_own_rate() {
        let yaml = "version: 1
senders:
  - {id: a1, phone_number_id: '1001', waba_id: '2001', portfolio_id: '3001', access_token_env: T, app_secret_env: S, mps: 50, default: true}
  - {id: a2, phone_number_id: '1002', waba_id: '2001', portfolio_id: '3001', access_token_env: T, app_secret_env: S}
  - {id: b1, phone_number_id: '1003', waba_id: '2002', portfolio_id: '3002', access_token_env: T, app_secret_env: S, mps: 200}
";
        let env = |_: &str| Some("x".to_owned());
        let mut settings = Settings::from_sources(
            None,
            &HashMap::from([("RATE_LIMIT_MPS".to_owned(), "30".to_owned())]),
        )
        .unwrap();
        settings.senders_file = Some(warden_settings::Senders::from_yaml(yaml, &env).unwrap());
        let c = DispatcherConfig::from_settings(&settings);
        // The default sender (stored as `default`): its mps; the others by id.
        assert_eq!(c.mps, 50);
        assert_eq!(c.mps_of("default"), 50);
        assert_eq!(c.mps_of("a2"), 30, "no mps: RATE_LIMIT_MPS");
        assert_eq!(c.mps_of("b1"), 200);
        assert_eq!(
            c.mps_of("gone"),
            50,
            "a removed sender goes out as the default"
        );
        assert_eq!(c.sender_mps.len(), 2);
        assert!(config(&[]).sender_mps.is_empty(), "one sender: as before");
    }
}
