//! What platform-sim remembers of thread control on a shared number (`crate::routing`
//! answers the calls): whether `take` is allowed, and the calls accepted.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use serde::Serialize;

/// What the sim remembers of thread control.
#[derive(Default)]
pub struct Routing {
    take_allowed: AtomicBool,
    calls: Mutex<Vec<ThreadControlCall>>,
}

/// One accepted call to `thread_control`.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct ThreadControlCall {
    pub phone_number_id: String,
    pub action: String,
    /// `to`, else `recipient`.
    pub to: String,
    pub target_role: Option<String>,
    pub metadata: Option<String>,
}

impl Routing {
    /// Whether `take` is allowed (this app is the escalation partner).
    pub fn take_allowed(&self) -> bool {
        self.take_allowed.load(Ordering::Relaxed)
    }

    pub fn allow_take(&self, allowed: bool) {
        self.take_allowed.store(allowed, Ordering::Relaxed);
    }

    pub fn record(&self, call: ThreadControlCall) {
        self.calls
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(call);
    }

    /// The calls accepted so far, oldest first.
    pub fn calls(&self) -> Vec<ThreadControlCall> {
        self.calls.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}
