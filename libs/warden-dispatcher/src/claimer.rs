//! Claims in groups: every claim must be durable (flushed) before its platform call, and on
//! a slow disk a WAL flush per claim caps a replica at a few hundred messages per second.
//! Tasks that want to claim queue here; one statement claims whatever is queued (up to
//! [`MAX_BATCH`]) in one commit and answers each task. With one task waiting it is a
//! plain single claim, so nothing waits for a batch to fill.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{Semaphore, mpsc, oneshot};
use uuid::Uuid;
use warden_core::delivery::{self, DeliveryError};
use warden_store::{DbError, PgPool};

/// Most claims in one statement.
pub const MAX_BATCH: usize = 128;
/// Claim statements in flight at once.
const IN_FLIGHT: usize = 4;

type Reply = oneshot::Sender<Result<Option<i32>, DeliveryError>>;

/// Hands out claims; cheap to clone.
#[derive(Clone)]
pub struct Claimer {
    tx: mpsc::Sender<(Uuid, Reply)>,
}

impl Claimer {
    pub fn start(pg: PgPool, owner: String, lease: Duration) -> Self {
        let (tx, rx) = mpsc::channel(4 * MAX_BATCH);
        tokio::spawn(run(rx, pg, Arc::from(owner.as_str()), lease));
        Self { tx }
    }

    /// `queued -> sending` for this replica: the attempt number, or `None` when the row
    /// is no longer claimable (sent, held by a campaign pause, locked by someone else...).
    pub async fn claim(&self, id: Uuid) -> Result<Option<i32>, DeliveryError> {
        let stopped = || DeliveryError(DbError::Unavailable("claimer stopped".into()));
        let (reply, answer) = oneshot::channel();
        self.tx.send((id, reply)).await.map_err(|_| stopped())?;
        answer.await.map_err(|_| stopped())?
    }
}

async fn run(mut rx: mpsc::Receiver<(Uuid, Reply)>, pg: PgPool, owner: Arc<str>, lease: Duration) {
    let slots = Arc::new(Semaphore::new(IN_FLIGHT));
    while let Some(first) = rx.recv().await {
        let Ok(slot) = Arc::clone(&slots).acquire_owned().await else {
            return;
        };
        // Whatever queued up meanwhile (also while the previous statements were busy).
        let mut batch = vec![first];
        while batch.len() < MAX_BATCH {
            match rx.try_recv() {
                Ok(next) => batch.push(next),
                Err(_) => break,
            }
        }
        let pg = pg.clone();
        let owner = Arc::clone(&owner);
        tokio::spawn(async move {
            let ids: Vec<Uuid> = batch.iter().map(|(id, _)| *id).collect();
            let result = delivery::claim_many(&pg, &ids, &owner, lease).await;
            drop(slot);
            match result {
                Ok(claimed) => {
                    let claimed: HashMap<Uuid, i32> =
                        claimed.into_iter().map(|c| (c.id, c.attempt)).collect();
                    for (id, reply) in batch {
                        let _ = reply.send(Ok(claimed.get(&id).copied()));
                    }
                }
                Err(e) => {
                    for (_, reply) in batch {
                        let _ = reply.send(Err(e.clone()));
                    }
                }
            }
        });
    }
}
