//! What a scheduler poll reports when a phase failed.

use uuid::Uuid;
use warden_core::CoreError;

/// A phase of [`crate::Scheduler::tick`] failed (the others still ran).
#[derive(Debug, thiserror::Error)]
#[error("scheduler {phase}: {source}")]
pub struct TickError {
    /// The phase, as named in logs ("campaign fan-out", "relay", ...).
    pub phase: &'static str,
    #[source]
    pub source: PhaseError,
}

/// Why one phase stopped.
#[derive(Debug, thiserror::Error)]
pub enum PhaseError {
    /// A core use case failed (the database, mostly).
    #[error(transparent)]
    Core(#[from] CoreError),
    /// One campaign's fan-out stopped (its lease was released).
    #[error("campaign {id}: {source}")]
    Campaign {
        id: Uuid,
        #[source]
        source: CoreError,
    },
    /// A campaign's recipients could not be sent: the database was unavailable to their
    /// sends (the page is read again at a later poll).
    #[error("campaign {id}: database unavailable during the campaign's sends")]
    CampaignSendsUnavailable { id: Uuid },
}
