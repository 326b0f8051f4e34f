//! The dispatcher's knobs (docs/configuration.md, Dispatcher). The webhook reads the retry bound
//! (`DISPATCH_MAX_ATTEMPTS`, `DISPATCH_BACKOFF_*`) too, so both paths share one bound.

use std::time::Duration;

use crate::source::Source;

/// The dispatcher's variables and what each means (`dispatcher --help`).
pub const DISPATCH_VARIABLES: &[(&str, &str)] = &[
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

/// The dispatcher's section of the tree; defaults as documented.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Dispatch {
    /// Replicas sharing the bucket (DISPATCHER_REPLICAS).
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
    pub unknown_max_wait: Duration,
    pub sweep_interval: Duration,
    pub drain_timeout: Duration,
    pub platform_timeout: Duration,
}

impl Default for Dispatch {
    fn default() -> Self {
        Dispatch {
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
        }
    }
}

impl Dispatch {
    pub(crate) fn read(src: &mut Source<'_>) -> Dispatch {
        let d = Dispatch::default();
        let replicas = match src.trimmed("DISPATCHER_REPLICAS") {
            None => d.replicas,
            Some(s) => match s.parse::<u32>() {
                Ok(n) if n >= 1 => n,
                _ => {
                    src.problem(
                        "DISPATCHER_REPLICAS",
                        format!("`{s}` is not a whole number of at least 1"),
                    );
                    d.replicas
                }
            },
        };
        let c = Dispatch {
            replicas,
            concurrency: src.whole("DISPATCH_CONCURRENCY", 1, d.concurrency),
            max_attempts: src.whole("DISPATCH_MAX_ATTEMPTS", 1, d.max_attempts),
            max_ack_pending: src.whole("DISPATCH_MAX_ACK_PENDING", 1, d.max_ack_pending),
            pair_interval: src.duration("PAIR_RATE_INTERVAL", d.pair_interval),
            lease: src.duration("DISPATCH_LEASE", d.lease),
            ack_wait: src.duration("DISPATCH_ACK_WAIT", d.ack_wait),
            backoff_base: src.duration("DISPATCH_BACKOFF_BASE", d.backoff_base),
            backoff_cap: src.duration("DISPATCH_BACKOFF_CAP", d.backoff_cap),
            unknown_settle: src.duration("DISPATCH_UNKNOWN_SETTLE", d.unknown_settle),
            unknown_max_wait: src.duration("DISPATCH_UNKNOWN_MAX_WAIT", d.unknown_max_wait),
            sweep_interval: src.duration("DISPATCH_SWEEP_INTERVAL", d.sweep_interval),
            drain_timeout: src.duration("DISPATCH_DRAIN_TIMEOUT", d.drain_timeout),
            platform_timeout: src.duration("PLATFORM_TIMEOUT", d.platform_timeout),
        };
        if c.ack_wait < Duration::from_secs(1) {
            src.problem("DISPATCH_ACK_WAIT", "must be at least 1s");
        }
        if c.lease < Duration::from_secs(1) {
            src.problem("DISPATCH_LEASE", "must be at least 1s");
        }
        if c.platform_timeout.is_zero() {
            src.problem("PLATFORM_TIMEOUT", "must be more than 0");
        }
        if c.backoff_cap < c.backoff_base {
            src.problem(
                "DISPATCH_BACKOFF_CAP",
                "must not be shorter than DISPATCH_BACKOFF_BASE",
            );
        }
        c
    }
}
