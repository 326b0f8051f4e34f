//! Cancelled campaigns: their queued-but-unsent messages end `failed` ("campaign
//! cancelled"), in bulk batches (`warden_core::campaigns::fanout::cancelled`), a bounded number per
//! poll.

use warden_core::campaigns::fanout::cancelled;

use crate::error::PhaseError;
use crate::{ACTOR, Scheduler, TickReport, metrics};

/// Batches per poll (the rest waits for the next poll).
const MAX_BATCHES: usize = 20;
const BATCH: i64 = 5000;

pub(crate) async fn fail_unsent(s: &Scheduler, report: &mut TickReport) -> Result<(), PhaseError> {
    for _ in 0..MAX_BATCHES {
        let moved = cancelled::fail_queued(s.core().pg(), BATCH, ACTOR).await?;
        let total: i64 = moved.iter().map(|m| m.messages).sum();
        if total == 0 {
            return Ok(());
        }
        report.cancelled_messages_failed += total as usize;
        metrics::CANCELLED_MESSAGES.inc_by(total as u64);
        if total < BATCH {
            return Ok(());
        }
    }
    report.more_work = true;
    Ok(())
}
