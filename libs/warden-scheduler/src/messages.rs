//! Scheduled messages: claim the due rows, send each through the one send path
//! (`warden_core::scheduling::due`), a bounded number of batches per poll.

use std::time::{Duration, Instant};

use futures::StreamExt;
use uuid::Uuid;
use warden_core::scheduling::due::{self, Dispatched, DueMessage};

use crate::error::PhaseError;
use crate::{Scheduler, TickReport, metrics};

/// Not started when the lease has less than this left (another scheduler could take the
/// row over while it is being sent).
const LEASE_MARGIN: Duration = Duration::from_secs(10);

/// Dispatch the due scheduled messages (several batches per poll, bounded).
pub(crate) async fn dispatch_due(s: &Scheduler, report: &mut TickReport) -> Result<(), PhaseError> {
    let pg = s.core().pg();
    for _ in 0..s.config().max_message_batches {
        if s.is_stopping() {
            return Ok(());
        }
        let rows =
            due::claim_due(pg, s.owner(), s.config().lease, s.config().message_batch).await?;
        if rows.is_empty() {
            return Ok(());
        }
        let claimed_at = Instant::now();
        let n = rows.len();
        report.messages_claimed += n;
        metrics::CLAIMED
            .with_label_values(&["message"])
            .inc_by(n as u64);
        let outcomes: Vec<(Uuid, Dispatched)> = futures::stream::iter(rows)
            .map(|row| dispatch_one(s, row, claimed_at))
            .buffer_unordered(s.config().concurrency.max(1))
            .collect()
            .await;
        let mut retry = Vec::new();
        for (id, o) in outcomes {
            let label = match o {
                Dispatched::Queued => {
                    report.messages_queued += 1;
                    "queued"
                }
                Dispatched::Refused => {
                    report.messages_refused += 1;
                    "refused"
                }
                Dispatched::Held => {
                    report.messages_held += 1;
                    "held"
                }
                Dispatched::Invalid => {
                    report.messages_invalid += 1;
                    "invalid"
                }
                Dispatched::Retry => {
                    retry.push(id);
                    "retry"
                }
                Dispatched::Gone => continue,
            };
            metrics::DISPATCHED.with_label_values(&[label]).inc();
        }
        if !retry.is_empty() {
            due::release(pg, s.owner(), &retry).await?;
            // Database trouble or stopping: leave the rest for the next poll.
            return Ok(());
        }
        if (n as i64) < s.config().message_batch {
            return Ok(());
        }
    }
    report.more_work = true;
    Ok(())
}

async fn dispatch_one(s: &Scheduler, row: DueMessage, claimed_at: Instant) -> (Uuid, Dispatched) {
    // Don't start what might outlive the lease.
    if s.is_stopping() || claimed_at.elapsed() + LEASE_MARGIN > s.config().lease {
        return (row.id, Dispatched::Retry);
    }
    (row.id, due::dispatch(s.core(), &row).await)
}
