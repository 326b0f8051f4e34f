//! Commit coalescing: concurrent POSTs share one transaction.
//!
//! A commit costs Postgres a WAL flush and a few round trips whatever it holds, so one
//! event per transaction caps single-event POSTs well below what the platform can send
//! (its bar: median <= 250 ms, < 1 % over 1 s, under bursts). Here each HTTP worker has
//! a few "lanes"; a lane takes the next waiting POST plus every POST queued behind it
//! (up to [`MAX_MERGED_EVENTS`]), stores all their events in one transaction
//! ([`crate::ingest::ingest`]) and answers each POST only after that commit. Nothing is
//! acknowledged before it is durable, a POST is never split, and a POST alone on an idle
//! lane is stored at once (no waiting for company).
//!
//! The same event in two queued POSTs is applied once, like any replay. If the shared
//! transaction cannot be stored, every POST in it gets the same 503 and the platform
//! retries each; an event that can never be applied is set aside by the careful mode of
//! `ingest` without failing its neighbours.

use std::collections::HashSet;
use std::sync::Arc;

use tokio::sync::{Mutex, mpsc, oneshot};
use tracing::Instrument;
use warden_core::Core;

use crate::events::Event;
use crate::ingest::{self, IngestError};
use crate::metrics;

/// Cap on the events of POSTs merged into one transaction (a larger POST goes alone).
pub const MAX_MERGED_EVENTS: usize = 1000;
/// POSTs waiting for a lane per worker before senders wait too.
const QUEUE: usize = 4096;

struct Job {
    events: Vec<Event>,
    reply: oneshot::Sender<Result<(), IngestError>>,
}

/// The queue in front of a worker's lanes.
#[derive(Clone)]
pub struct Coalescer {
    queue: mpsc::Sender<Job>,
}

impl Coalescer {
    /// Start `lanes` lanes on the current runtime (the worker's).
    pub fn start(core: Core, lanes: usize) -> Coalescer {
        let (queue, rx) = mpsc::channel(QUEUE);
        let rx = Arc::new(Mutex::new(rx));
        for _ in 0..lanes.max(1) {
            tokio::spawn(lane(core.clone(), rx.clone()));
        }
        Coalescer { queue }
    }

    /// Store `events` (distinct keys) and return once they are committed.
    pub async fn store(&self, events: Vec<Event>) -> Result<(), IngestError> {
        if events.is_empty() {
            return Ok(());
        }
        let (reply, done) = oneshot::channel();
        self.queue
            .send(Job { events, reply })
            .await
            .map_err(|_| IngestError::Unavailable("webhook is shutting down".into()))?;
        done.await
            .map_err(|_| IngestError::Unavailable("webhook is shutting down".into()))?
    }
}

async fn lane(core: Core, rx: Arc<Mutex<mpsc::Receiver<Job>>>) {
    loop {
        let mut jobs = Vec::new();
        {
            let mut rx = rx.lock().await;
            match rx.recv().await {
                Some(job) => jobs.push(job),
                None => return,
            }
            let mut events = jobs[0].events.len();
            while events < MAX_MERGED_EVENTS {
                match rx.try_recv() {
                    Ok(job) => {
                        events += job.events.len();
                        jobs.push(job);
                    }
                    Err(_) => break,
                }
            }
        }
        let (merged, duplicates) = merge(&mut jobs);
        let span = tracing::info_span!("webhook.store", posts = jobs.len(), events = merged.len());
        let result = ingest::ingest(&core, merged)
            .instrument(span)
            .await
            .map(|_| ());
        metrics::REPLAYS.inc_by(duplicates);
        for job in jobs {
            // A POST whose client went away no longer waits for its answer.
            let _ = job.reply.send(result.clone());
        }
    }
}

/// The jobs' events in arrival order, each key once; and how many repeats were dropped.
fn merge(jobs: &mut [Job]) -> (Vec<Event>, u64) {
    if jobs.len() == 1 {
        return (std::mem::take(&mut jobs[0].events), 0);
    }
    let mut seen = HashSet::new();
    let mut merged = Vec::new();
    let mut duplicates = 0;
    for job in jobs.iter_mut() {
        for event in job.events.drain(..) {
            if seen.insert(event.key.clone()) {
                merged.push(event);
            } else {
                duplicates += 1;
            }
        }
    }
    (merged, duplicates)
}
