//! The dispatcher's knobs: RATE_LIMIT_MPS from the settings tree, the rest from its own
//! environment variables (all optional, defaults below).

use std::collections::HashMap;
use std::time::Duration;

use warden_settings::{Settings, parse_duration};

/// Environment variables the dispatcher reads besides the shared settings.
pub const VARIABLES: &[(&str, &str)] = &[
    (
        "DISPATCHER_REPLICAS",
        "replicas sharing the bucket; the Redis-down fallback limits each to RATE_LIMIT_MPS / replicas (default 1)",
    ),
    (
        "DISPATCH_CONCURRENCY",
        "messages processed at once per replica (default 64)",
    ),
    (
        "PAIR_RATE_INTERVAL",
        "at most one message per recipient per interval; later ones are held, not failed (default 6s; 0 disables)",
    ),
    (
        "DISPATCH_MAX_ATTEMPTS",
        "platform calls per message before a retryable error ends it `failed` (default 8)",
    ),
    (
        "DISPATCH_LEASE",
        "how long a claimed message counts as in flight; never less than PLATFORM_TIMEOUT + 5s, so a live call always holds its claim (default 60s)",
    ),
    (
        "DISPATCH_ACK_WAIT",
        "JetStream ack wait of the consumer (default 30s)",
    ),
    (
        "DISPATCH_MAX_ACK_PENDING",
        "JetStream max ack pending of the consumer (default 1000)",
    ),
    (
        "DISPATCH_BACKOFF_BASE",
        "first retry delay; doubles per retry, with jitter (default 1s)",
    ),
    ("DISPATCH_BACKOFF_CAP", "longest retry delay (default 5m)"),
    (
        "DISPATCH_UNKNOWN_SETTLE",
        "outcome unknown (a timeout, or a claim whose dispatcher died): wait at least this long for its status webhook before sending again (default 30s)",
    ),
    (
        "DISPATCH_UNKNOWN_MAX_WAIT",
        "an unknown outcome is resent once later status webhooks arrived without its own; with no such evidence, after this long once webhooks are quiet (default 15m)",
    ),
    (
        "DISPATCH_SWEEP_INTERVAL",
        "how often each replica sweeps `sending` rows whose lease ended and settles them by the same rule, also when no stream message drives them any more (default 5s; 0 disables)",
    ),
    (
        "DISPATCH_DRAIN_TIMEOUT",
        "on SIGTERM, how long in-flight sends may take to finish (default 20s)",
    ),
    (
        "PLATFORM_TIMEOUT",
        "whole-request timeout of a platform call (default 10s)",
    ),
];

/// A claim outlives its platform call by at least this much (claim to call, recording).
pub const LEASE_MARGIN: Duration = Duration::from_secs(5);

/// The durable consumer every replica shares.
pub const CONSUMER_NAME: &str = "dispatcher";

#[derive(Clone, Debug)]
pub struct DispatcherConfig {
    /// Token bucket capacity and refill per second (RATE_LIMIT_MPS).
    pub mps: u32,
    pub replicas: u32,
    pub concurrency: usize,
    pub pair_interval: Duration,
    pub max_attempts: i32,
    pub lease: Duration,
    pub ack_wait: Duration,
    pub max_ack_pending: i64,
    pub backoff_base: Duration,
    pub backoff_cap: Duration,
    pub unknown_settle: Duration,
    /// A dead claim is resent after this long even with no sign that webhooks flow.
    pub unknown_max_wait: Duration,
    /// Period of the unknown-outcome sweep ([`crate::sweep`]); zero: no sweep.
    pub sweep_interval: Duration,
    pub drain_timeout: Duration,
    pub platform_timeout: Duration,
    /// The bucket's channel; `None` is the service's channel (`whatsapp`). Tests use a
    /// private one so they do not share a bucket.
    pub bucket_channel: Option<String>,
    /// Durable consumer name (the same for every replica).
    pub consumer: String,
    /// This replica's id, written as `lease_owner`.
    pub owner: String,
}

impl DispatcherConfig {
    /// Defaults with RATE_LIMIT_MPS from `settings`.
    pub fn defaults(settings: &Settings) -> Self {
        Self {
            mps: settings.rate_limit_mps,
            replicas: 1,
            concurrency: 64,
            pair_interval: Duration::from_secs(6),
            max_attempts: 8,
            lease: Duration::from_secs(60),
            ack_wait: Duration::from_secs(30),
            max_ack_pending: 1000,
            backoff_base: Duration::from_secs(1),
            backoff_cap: Duration::from_secs(300),
            unknown_settle: Duration::from_secs(30),
            unknown_max_wait: Duration::from_secs(900),
            sweep_interval: Duration::from_secs(5),
            drain_timeout: Duration::from_secs(20),
            platform_timeout: Duration::from_secs(10),
            bucket_channel: None,
            consumer: CONSUMER_NAME.to_owned(),
            owner: default_owner(),
        }
    }

    /// Defaults overridden by the process environment; `Err` names the bad variable.
    pub fn from_env(settings: &Settings) -> Result<Self, String> {
        let env: HashMap<String, String> = std::env::vars().collect();
        Self::from_vars(settings, &env)
    }

    pub fn from_vars(settings: &Settings, env: &HashMap<String, String>) -> Result<Self, String> {
        let mut c = Self::defaults(settings);
        let get = |k: &str| env.get(k).map(|v| v.trim()).filter(|v| !v.is_empty());
        let duration = |k: &str, d: &mut Duration| -> Result<(), String> {
            if let Some(v) = get(k) {
                *d = parse_duration(v).map_err(|e| format!("{k}: {e}"))?;
            }
            Ok(())
        };
        fn number<T: std::str::FromStr + PartialOrd>(
            k: &str,
            raw: Option<&str>,
            min: T,
            out: &mut T,
        ) -> Result<(), String> {
            if let Some(v) = raw {
                match v.parse::<T>() {
                    Ok(n) if n >= min => *out = n,
                    _ => return Err(format!("{k}: `{v}` is not a whole number in range")),
                }
            }
            Ok(())
        }
        c.replicas = warden_ratelimit::parse_replicas(get("DISPATCHER_REPLICAS"))?;
        number(
            "DISPATCH_CONCURRENCY",
            get("DISPATCH_CONCURRENCY"),
            1,
            &mut c.concurrency,
        )?;
        number(
            "DISPATCH_MAX_ATTEMPTS",
            get("DISPATCH_MAX_ATTEMPTS"),
            1,
            &mut c.max_attempts,
        )?;
        number(
            "DISPATCH_MAX_ACK_PENDING",
            get("DISPATCH_MAX_ACK_PENDING"),
            1,
            &mut c.max_ack_pending,
        )?;
        duration("PAIR_RATE_INTERVAL", &mut c.pair_interval)?;
        duration("DISPATCH_LEASE", &mut c.lease)?;
        duration("DISPATCH_ACK_WAIT", &mut c.ack_wait)?;
        duration("DISPATCH_BACKOFF_BASE", &mut c.backoff_base)?;
        duration("DISPATCH_BACKOFF_CAP", &mut c.backoff_cap)?;
        duration("DISPATCH_UNKNOWN_SETTLE", &mut c.unknown_settle)?;
        duration("DISPATCH_UNKNOWN_MAX_WAIT", &mut c.unknown_max_wait)?;
        duration("DISPATCH_SWEEP_INTERVAL", &mut c.sweep_interval)?;
        duration("DISPATCH_DRAIN_TIMEOUT", &mut c.drain_timeout)?;
        duration("PLATFORM_TIMEOUT", &mut c.platform_timeout)?;
        if c.ack_wait < Duration::from_secs(1) {
            return Err("DISPATCH_ACK_WAIT: must be at least 1s".into());
        }
        if c.lease < Duration::from_secs(1) {
            return Err("DISPATCH_LEASE: must be at least 1s".into());
        }
        if c.platform_timeout.is_zero() {
            return Err("PLATFORM_TIMEOUT: must be more than 0".into());
        }
        if c.backoff_cap < c.backoff_base {
            return Err(
                "DISPATCH_BACKOFF_CAP: must not be shorter than DISPATCH_BACKOFF_BASE".into(),
            );
        }
        Ok(c)
    }

    /// The lease a claim takes: DISPATCH_LEASE, but never shorter than a whole platform
    /// call plus [`LEASE_MARGIN`]. A lease that ended while its call was still running
    /// would let the call's row be taken for a dead claim and resent beside it.
    pub fn claim_lease(&self) -> Duration {
        self.lease.max(self.platform_timeout + LEASE_MARGIN)
    }

    /// How dead claims are settled (see [`crate::plan::UnknownOutcome`]).
    pub fn unknown_outcome(&self) -> crate::plan::UnknownOutcome {
        crate::plan::UnknownOutcome {
            settle: self.unknown_settle,
            max_wait: self.unknown_max_wait,
        }
    }

    /// The channel whose bucket this dispatcher takes tokens from.
    pub fn bucket_channel(&self) -> &str {
        self.bucket_channel
            .as_deref()
            .unwrap_or(warden_settings::DEFAULT_CHANNEL)
    }
}

/// `<host>-<pid>-<random>`: unique per process, readable in `lease_owner`.
fn default_owner() -> String {
    let host = std::env::var("HOSTNAME")
        .ok()
        .filter(|h| !h.is_empty())
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
    use super::*;

    fn settings() -> Settings {
        Settings::from_sources(None, &HashMap::new()).unwrap()
    }

    fn vars(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn defaults_follow_the_brief() {
        let c = DispatcherConfig::from_vars(&settings(), &HashMap::new()).unwrap();
        assert_eq!(c.mps, 80);
        assert_eq!(c.replicas, 1);
        assert_eq!(c.pair_interval, Duration::from_secs(6));
        assert_eq!(c.max_attempts, 8);
        assert_eq!(c.ack_wait, Duration::from_secs(30));
        assert_eq!(c.consumer, "dispatcher");
        assert_eq!(c.bucket_channel(), "whatsapp");
        assert!(!c.owner.is_empty());
        assert_eq!(c.sweep_interval, Duration::from_secs(5));
    }

    #[test]
    fn a_claim_always_outlives_its_call() {
        let c = DispatcherConfig::from_vars(
            &settings(),
            &vars(&[("DISPATCH_LEASE", "2s"), ("PLATFORM_TIMEOUT", "10s")]),
        )
        .unwrap();
        assert_eq!(c.claim_lease(), Duration::from_secs(15));
        let c =
            DispatcherConfig::from_vars(&settings(), &vars(&[("DISPATCH_LEASE", "90s")])).unwrap();
        assert_eq!(c.claim_lease(), Duration::from_secs(90));
    }

    #[test]
    fn overrides_and_bad_values() {
        let c = DispatcherConfig::from_vars(
            &settings(),
            &vars(&[
                ("PAIR_RATE_INTERVAL", "0"),
                ("DISPATCH_MAX_ATTEMPTS", "3"),
                ("DISPATCHER_REPLICAS", "2"),
                ("DISPATCH_BACKOFF_BASE", "100ms"),
            ]),
        )
        .unwrap();
        assert_eq!(c.pair_interval, Duration::ZERO);
        assert_eq!(c.max_attempts, 3);
        assert_eq!(c.replicas, 2);
        assert_eq!(c.backoff_base, Duration::from_millis(100));
        let err =
            DispatcherConfig::from_vars(&settings(), &vars(&[("DISPATCH_MAX_ATTEMPTS", "0")]))
                .unwrap_err();
        assert!(err.starts_with("DISPATCH_MAX_ATTEMPTS"), "{err}");
        let err =
            DispatcherConfig::from_vars(&settings(), &vars(&[("PAIR_RATE_INTERVAL", "soon")]))
                .unwrap_err();
        assert!(err.starts_with("PAIR_RATE_INTERVAL"), "{err}");
    }
}
