//! Pacing per sender: each sender (phone number) has its own token bucket at its own
//! number's rate, and a message waits for its own sender's tokens only.
//!
//! With several senders, at most a share of `DISPATCH_CONCURRENCY` of one sender's
//! messages wait for its tokens at once (about two seconds of its rate, never more than
//! concurrency / senders); one more is put back on the stream until about when the
//! waiters ahead of it are served. Without that bound, the backlog of a slow number would
//! fill every in-flight slot while waiting for its tokens and hold the other numbers'
//! messages behind it. With one sender nothing is bounded: it paces exactly as before.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use warden_ratelimit::TokenBucket;
use warden_settings::STORED_DEFAULT;

use crate::config::DispatcherConfig;

/// A sender keeps about this much of its rate waiting for tokens, so its bucket never
/// idles while messages put back are on their way again.
const WAIT_AHEAD: Duration = Duration::from_secs(2);
/// ... and never fewer waiters than this (a slow number still has one in reserve).
const MIN_WAITERS: u32 = 2;
/// The longest a message is put back for: it is decided again at least this often.
const MAX_PUT_BACK: Duration = Duration::from_secs(60);

/// One sender's bucket and the messages of this replica waiting on it.
pub(crate) struct SenderPace {
    /// The stored key of its messages (`default` for the default sender).
    pub key: String,
    pub bucket: TokenBucket,
    /// Its rate until the platform says what its number's throughput is.
    pub setting_mps: u32,
    waiting: AtomicU32,
    /// When the next message put back should come again (spaced at the sender's rate).
    next_turn: Mutex<Instant>,
}

impl SenderPace {
    fn new(key: String, bucket: TokenBucket, setting_mps: u32) -> Self {
        Self {
            key,
            bucket,
            setting_mps,
            waiting: AtomicU32::new(0),
            next_turn: Mutex::new(Instant::now()),
        }
    }
}

/// A place among a sender's waiters; given back when dropped.
#[derive(Debug)]
pub(crate) struct Turn<'a>(&'a AtomicU32);

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Every sender's pace.
pub(crate) struct Pacing {
    default: SenderPace,
    others: HashMap<String, SenderPace>,
    /// Most waiters of one sender: concurrency / senders; `None` with one sender.
    share: Option<u32>,
    replicas: u32,
}

impl Pacing {
    /// `default` is the default sender's bucket (the channel's key); every other sender of
    /// `cfg` gets a bucket beside it, sharing its Redis and fallback state.
    pub fn new(default: TokenBucket, cfg: &DispatcherConfig) -> Self {
        let others: HashMap<String, SenderPace> = cfg
            .sender_mps
            .iter()
            .map(|(key, &mps)| {
                let bucket = default.sibling(Some(key), mps);
                (key.clone(), SenderPace::new(key.clone(), bucket, mps))
            })
            .collect();
        let senders = others.len() as u32 + 1;
        Self {
            default: SenderPace::new(STORED_DEFAULT.to_owned(), default, cfg.mps),
            share: (senders > 1).then(|| (cfg.dispatch.concurrency as u32 / senders).max(1)),
            others,
            replicas: cfg.dispatch.replicas.max(1),
        }
    }

    /// The pace of the sender stored as `sender`; a sender no longer in the senders file
    /// goes out as the default sender, so it takes the default sender's tokens.
    pub fn of(&self, sender: &str) -> &SenderPace {
        self.others.get(sender).unwrap_or(&self.default)
    }

    pub fn default_bucket(&self) -> &TokenBucket {
        &self.default.bucket
    }

    /// Every sender, the default first.
    pub fn all(&self) -> impl Iterator<Item = &SenderPace> {
        std::iter::once(&self.default).chain(self.others.values())
    }

    /// A place among `pace`'s waiters, or how long to put the message back for: until
    /// about when the waiters ahead of it have half gone.
    pub fn enter<'a>(&self, pace: &'a SenderPace) -> Result<Turn<'a>, Duration> {
        let Some(share) = self.share else {
            pace.waiting.fetch_add(1, Ordering::AcqRel);
            return Ok(Turn(&pace.waiting));
        };
        let rate = self.rate(pace);
        let most =
            ((rate * WAIT_AHEAD.as_secs_f64()).ceil() as u32).clamp(MIN_WAITERS.min(share), share);
        match pace
            .waiting
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |w| {
                (w < most).then_some(w + 1)
            }) {
            Ok(_) => Ok(Turn(&pace.waiting)),
            Err(_) => Err(self.put_back(pace, rate, most)),
        }
    }

    /// This replica's share of the sender's rate, per second.
    fn rate(&self, pace: &SenderPace) -> f64 {
        (f64::from(pace.bucket.mps()) / f64::from(self.replicas)).max(0.001)
    }

    /// Messages put back come again one per token: the first when half of the `most`
    /// waiters have been served, each later one a token after the one before.
    fn put_back(&self, pace: &SenderPace, rate: f64, most: u32) -> Duration {
        let spacing = Duration::from_secs_f64(1.0 / rate);
        let lead = spacing * (most / 2).max(1);
        let now = Instant::now();
        let mut next = pace.next_turn.lock().unwrap_or_else(|p| p.into_inner());
        let at = (*next).max(now + lead).min(now + MAX_PUT_BACK);
        *next = at + spacing;
        at - now
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn pacing(mps: &[(&str, u32)], concurrency: usize) -> Pacing {
        let settings = warden_settings::Settings::from_sources(None, &HashMap::new()).unwrap();
        let mut cfg = DispatcherConfig::defaults(&settings);
        cfg.mps = 50;
        cfg.sender_mps = mps
            .iter()
            .map(|(k, v)| (k.to_string(), *v))
            .collect::<BTreeMap<_, _>>();
        cfg.dispatch.concurrency = concurrency;
        Pacing::new(TokenBucket::new(None, "t", cfg.mps, 1), &cfg)
    }

    #[test]
    fn one_sender_waits_without_bound() {
        let p = pacing(&[], 4);
        let pace = p.of(STORED_DEFAULT);
        let turns: Vec<_> = (0..100).map(|_| p.enter(pace).unwrap()).collect();
        assert_eq!(pace.waiting.load(Ordering::Acquire), 100);
        drop(turns);
        assert_eq!(pace.waiting.load(Ordering::Acquire), 0);
    }

    #[test]
    fn each_sender_has_its_own_bucket_and_a_bounded_share_of_waiters() {
        let p = pacing(&[("a2", 1), ("b1", 200)], 64);
        assert_eq!(p.of("a2").bucket.key(), "warden:bucket:t:a2");
        assert_eq!(p.of("b1").bucket.mps(), 200);
        assert_eq!(p.of(STORED_DEFAULT).bucket.key(), "warden:bucket:t");
        assert_eq!(p.of("gone").key, STORED_DEFAULT);
        // A slow number: two waiters (MIN_WAITERS), then put back a token apart.
        let slow = p.of("a2");
        let _held = (p.enter(slow).unwrap(), p.enter(slow).unwrap());
        let first = p.enter(slow).unwrap_err();
        let second = p.enter(slow).unwrap_err();
        assert!(first >= Duration::from_millis(900), "{first:?}");
        assert!(
            second >= first + Duration::from_millis(900),
            "{first:?} {second:?}"
        );
        // A fast one: at most its share of the 64 in flight (64 / 3 senders).
        let fast = p.of("b1");
        let turns: Vec<_> = std::iter::from_fn(|| p.enter(fast).ok())
            .take(100)
            .collect();
        assert_eq!(turns.len(), 21);
        // The slow number's backlog takes nothing from the others'.
        assert!(p.enter(p.of(STORED_DEFAULT)).is_ok());
    }

    #[test]
    fn a_message_is_never_put_back_for_longer_than_the_bound() {
        let p = pacing(&[("a2", 1)], 64);
        let slow = p.of("a2");
        let _held = (p.enter(slow).unwrap(), p.enter(slow).unwrap());
        let longest = (0..200).map(|_| p.enter(slow).unwrap_err()).max().unwrap();
        assert!(longest <= MAX_PUT_BACK, "{longest:?}");
    }
}
