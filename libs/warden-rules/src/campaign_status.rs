//! A campaign's status: the states `get_campaign` shows (docs/tools.md), with the
//! spellings stored in `campaigns.status` and shown to agents.
//! Pause takes an active campaign (scheduled, running, sending) to paused, resume a paused
//! one to running, cancel any non-terminal one to cancelled; the fan-out ends a running
//! one completed or failed. With `CAMPAIGN_APPROVAL=required` an agent's campaign starts
//! pending_approval: an operator's approve makes it scheduled, reject makes it rejected.

use std::fmt;
use std::str::FromStr;

/// Where a campaign stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CampaignStatus {
    /// Waiting for its `deliver_at`.
    Scheduled,
    /// Its audience is being fanned out (or its messages are on their way).
    Running,
    /// Behaves like running: still read and accepted (docs/tools.md lists it among
    /// get_campaign's states), though nothing writes it now.
    Sending,
    /// Stopped by an operator or a halt-class platform error until resumed.
    Paused,
    /// Every recipient has a final outcome and at least one was sent.
    Completed,
    /// Nothing could be sent, or the campaign could not run at all.
    Failed,
    /// Stopped for good; the recipients not yet sent count as cancelled.
    Cancelled,
    /// Waiting for an operator's approval (`CAMPAIGN_APPROVAL=required`): sends nothing.
    PendingApproval,
    /// An operator refused it (its `status_reason` says why); it never sends.
    Rejected,
}

/// A stored status that is none of the known spellings.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown campaign status {0:?}; expected scheduled, running, sending, paused, completed, failed, cancelled, pending_approval or rejected"
)]
pub struct UnknownCampaignStatus(pub String);

impl CampaignStatus {
    /// Every status, in the order of the state table.
    pub const ALL: [CampaignStatus; 9] = [
        Self::Scheduled,
        Self::Running,
        Self::Sending,
        Self::Paused,
        Self::Completed,
        Self::Failed,
        Self::Cancelled,
        Self::PendingApproval,
        Self::Rejected,
    ];
    /// The states in which a campaign still sends (or will): pause applies to these.
    pub const ACTIVE: [CampaignStatus; 3] = [Self::Scheduled, Self::Running, Self::Sending];
    /// The states in which the fan-out sends now.
    pub const SENDING: [CampaignStatus; 2] = [Self::Running, Self::Sending];
    /// The states a campaign never leaves.
    pub const TERMINAL: [CampaignStatus; 4] = [
        Self::Completed,
        Self::Failed,
        Self::Cancelled,
        Self::Rejected,
    ];

    /// The stored (and reported) spelling.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Scheduled => "scheduled",
            Self::Running => "running",
            Self::Sending => "sending",
            Self::Paused => "paused",
            Self::Completed => "completed",
            Self::Failed => "failed",
            Self::Cancelled => "cancelled",
            Self::PendingApproval => "pending_approval",
            Self::Rejected => "rejected",
        }
    }

    /// Scheduled, running or sending: it still sends, or will.
    pub const fn is_active(self) -> bool {
        matches!(self, Self::Scheduled | Self::Running | Self::Sending)
    }

    /// Running or sending: the fan-out sends now.
    pub const fn is_sending(self) -> bool {
        matches!(self, Self::Running | Self::Sending)
    }

    /// Completed, failed, cancelled or rejected: never left.
    pub const fn is_terminal(self) -> bool {
        matches!(
            self,
            Self::Completed | Self::Failed | Self::Cancelled | Self::Rejected
        )
    }

    /// The stored spellings of `set`, e.g. to bind as a SQL `text[]`.
    pub fn names(set: &[CampaignStatus]) -> Vec<&'static str> {
        set.iter().map(|s| s.as_str()).collect()
    }
}

impl fmt::Display for CampaignStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for CampaignStatus {
    type Err = UnknownCampaignStatus;
    /// Exactly the stored spellings (lower case).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|st| st.as_str() == s)
            .ok_or_else(|| UnknownCampaignStatus(s.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_status_round_trips_through_its_stored_spelling() {
        for st in CampaignStatus::ALL {
            assert_eq!(st.as_str().parse::<CampaignStatus>(), Ok(st));
            assert_eq!(st.to_string(), st.as_str());
        }
        assert!("Running".parse::<CampaignStatus>().is_err());
        assert!("".parse::<CampaignStatus>().is_err());
    }

    #[test]
    fn the_sets_match_the_predicates() {
        for st in CampaignStatus::ALL {
            assert_eq!(st.is_active(), CampaignStatus::ACTIVE.contains(&st), "{st}");
            assert_eq!(
                st.is_sending(),
                CampaignStatus::SENDING.contains(&st),
                "{st}"
            );
            assert_eq!(
                st.is_terminal(),
                CampaignStatus::TERMINAL.contains(&st),
                "{st}"
            );
            // Paused is neither active nor terminal; nothing is both.
            assert!(!(st.is_active() && st.is_terminal()));
        }
        assert!(!CampaignStatus::Paused.is_active() && !CampaignStatus::Paused.is_terminal());
        // Waiting for approval sends nothing and may still be approved or cancelled.
        let pending = CampaignStatus::PendingApproval;
        assert!(!pending.is_active() && !pending.is_sending() && !pending.is_terminal());
        assert!(CampaignStatus::Rejected.is_terminal());
        assert_eq!(
            "pending_approval".parse::<CampaignStatus>(),
            Ok(CampaignStatus::PendingApproval)
        );
    }
}
