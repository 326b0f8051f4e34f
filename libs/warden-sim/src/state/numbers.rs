//! The numbers the sim serves at run time: each with its own quality, tier, throughput
//! level and send pacing (see `crate::senders` for how they are configured).

use std::sync::Mutex;
use std::time::Instant;

use serde::Serialize;
use warden_platform::webhook::Metadata;

use crate::senders::SenderSpec;

#[derive(Debug, Clone, Serialize)]
pub struct PhoneState {
    pub quality_rating: String,
    pub messaging_limit_tier: String,
    pub throughput_level: String,
    /// In coexistence with the WhatsApp Business app (`is_on_biz_app`).
    pub is_on_biz_app: bool,
    /// Sends per second before 130429; absent: no limit.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub throughput_mps: Option<u32>,
}

impl Default for PhoneState {
    fn default() -> Self {
        Self {
            quality_rating: "GREEN".to_owned(),
            messaging_limit_tier: "TIER_1K".to_owned(),
            throughput_level: "STANDARD".to_owned(),
            is_on_biz_app: false,
            throughput_mps: None,
        }
    }
}

impl PhoneState {
    /// The state a number starts (and is reset) with.
    pub fn initial(spec: &SenderSpec) -> Self {
        Self {
            quality_rating: spec.quality.clone(),
            throughput_mps: spec.throughput_mps,
            ..Self::default()
        }
    }
}

/// A token bucket of one second's sends: a burst of `mps`, refilled at `mps` a second,
/// which is how a number's throughput behaves seen from one client.
#[derive(Debug)]
struct Bucket {
    tokens: f64,
    at: Instant,
}

/// One served number.
#[derive(Debug)]
pub struct Number {
    pub spec: SenderSpec,
    /// Index (in [`Numbers`]) of the first number with the same account and app secret:
    /// webhooks of one origin can share a POST (same `entry.id`, same signature).
    pub origin: usize,
    /// `Bearer <token>`, compared as a whole first (the common case).
    pub expected_auth: String,
    phone: Mutex<PhoneState>,
    bucket: Mutex<Bucket>,
}

impl Number {
    fn new(spec: SenderSpec, origin: usize) -> Self {
        let phone = PhoneState::initial(&spec);
        Self {
            expected_auth: format!("Bearer {}", spec.access_token),
            bucket: Mutex::new(Bucket {
                tokens: f64::from(phone.throughput_mps.unwrap_or(0)),
                at: Instant::now(),
            }),
            phone: Mutex::new(phone),
            origin,
            spec,
        }
    }

    pub fn id(&self) -> &str {
        &self.spec.phone_number_id
    }

    pub fn waba_id(&self) -> &str {
        &self.spec.waba_id
    }

    /// `metadata` of this number's message webhooks.
    pub fn metadata(&self) -> Metadata {
        Metadata {
            display_phone_number: self.spec.display_phone_number.clone(),
            phone_number_id: self.spec.phone_number_id.clone(),
        }
    }

    pub fn phone(&self) -> PhoneState {
        self.phone.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Changes the phone state under its lock; returns the state before and after.
    pub fn update_phone(&self, f: impl FnOnce(&mut PhoneState)) -> (PhoneState, PhoneState) {
        let mut p = self.phone.lock().unwrap_or_else(|p| p.into_inner());
        let before = p.clone();
        f(&mut p);
        (before, p.clone())
    }

    /// Takes one send from the number's throughput; false when it is used up this second.
    pub fn take_send(&self) -> bool {
        // Read under the lock without cloning the state: this runs on every send.
        let limit = self
            .phone
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .throughput_mps;
        let Some(mps) = limit else {
            return true;
        };
        let mps = f64::from(mps);
        let mut b = self.bucket.lock().unwrap_or_else(|p| p.into_inner());
        let now = Instant::now();
        b.tokens = (b.tokens + now.duration_since(b.at).as_secs_f64() * mps).min(mps);
        b.at = now;
        if b.tokens >= 1.0 {
            b.tokens -= 1.0;
            true
        } else {
            false
        }
    }

    /// Back to the configured quality and throughput, with a full second of sends.
    pub fn reset(&self) {
        let initial = PhoneState::initial(&self.spec);
        let tokens = f64::from(initial.throughput_mps.unwrap_or(0));
        *self.phone.lock().unwrap_or_else(|p| p.into_inner()) = initial;
        *self.bucket.lock().unwrap_or_else(|p| p.into_inner()) = Bucket {
            tokens,
            at: Instant::now(),
        };
    }

    /// A new throughput limit starts with a full second of sends.
    pub fn set_throughput_mps(&self, mps: Option<u32>) {
        self.update_phone(|p| p.throughput_mps = mps);
        *self.bucket.lock().unwrap_or_else(|p| p.into_inner()) = Bucket {
            tokens: f64::from(mps.unwrap_or(0)),
            at: Instant::now(),
        };
    }
}

/// Every served number, in the configured order (the first is the default of the control
/// endpoints).
#[derive(Debug)]
pub struct Numbers {
    list: Vec<Number>,
}

impl Numbers {
    /// `specs` must not be empty (`crate::senders` refuses an empty file); an empty list
    /// falls back to the default settings' number rather than panicking later.
    pub fn new(mut specs: Vec<SenderSpec>) -> Self {
        if specs.is_empty() {
            specs.push(SenderSpec::from_config(&crate::config::SimConfig::default()));
        }
        let mut list: Vec<Number> = Vec::with_capacity(specs.len());
        for spec in specs {
            let origin = list
                .iter()
                .position(|n| {
                    n.spec.waba_id == spec.waba_id && n.spec.app_secret == spec.app_secret
                })
                .unwrap_or(list.len());
            list.push(Number::new(spec, origin));
        }
        Self { list }
    }

    pub fn first(&self) -> &Number {
        // `new` never leaves the list empty.
        &self.list[0]
    }

    pub fn all(&self) -> &[Number] {
        &self.list
    }

    pub fn get(&self, phone_number_id: &str) -> Option<&Number> {
        self.list.iter().find(|n| n.id() == phone_number_id)
    }

    /// The numbers of a business account.
    pub fn of_waba<'a>(&'a self, waba_id: &'a str) -> impl Iterator<Item = &'a Number> + 'a {
        self.list.iter().filter(move |n| n.waba_id() == waba_id)
    }

    /// The account ids, each once, in order.
    pub fn wabas(&self) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        for n in &self.list {
            if !out.contains(&n.waba_id()) {
                out.push(n.waba_id());
            }
        }
        out
    }

    /// The served ids, for an error naming the choices.
    pub fn ids(&self) -> String {
        let ids: Vec<&str> = self.list.iter().map(Number::id).collect();
        ids.join(", ")
    }

    pub fn reset(&self) {
        for n in &self.list {
            n.reset();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(id: &str, waba: &str, secret: &str, mps: Option<u32>) -> SenderSpec {
        SenderSpec {
            phone_number_id: id.into(),
            display_phone_number: format!("1555{id}"),
            waba_id: waba.into(),
            portfolio_id: None,
            access_token: format!("tok-{id}"),
            app_secret: secret.into(),
            throughput_mps: mps,
            quality: "GREEN".into(),
        }
    }

    #[test]
    fn origins_group_numbers_of_one_account_and_secret() {
        let n = Numbers::new(vec![
            spec("1", "w1", "s", None),
            spec("2", "w2", "s", None),
            spec("3", "w1", "s", None),
            spec("4", "w1", "other", None),
        ]);
        let origins: Vec<usize> = n.all().iter().map(|n| n.origin).collect();
        assert_eq!(origins, [0, 1, 0, 3]);
        assert_eq!(n.wabas(), ["w1", "w2"]);
        assert_eq!(n.of_waba("w1").count(), 3);
    }

    #[test]
    fn throughput_is_a_bucket_of_one_second() {
        let n = Numbers::new(vec![
            spec("1", "w", "s", Some(3)),
            spec("2", "w", "s", None),
        ]);
        let limited = n.get("1").unwrap();
        let taken = (0..10).filter(|_| limited.take_send()).count();
        assert_eq!(taken, 3);
        assert!((0..1000).all(|_| n.get("2").unwrap().take_send()));
        limited.reset();
        assert!(limited.take_send());
    }
}
