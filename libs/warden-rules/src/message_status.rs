//! The delivery status of a message, as stored in `messages.status` and reported to agents.
//!
//! Statuses only move forward ([`MessageStatus::advances`]): a late `delivered` never
//! overwrites `read`, and `failed` may follow `sent` but not `delivered`/`read`.

use std::fmt;
use std::str::FromStr;

/// Where a message is in its life. The stored spellings are [`MessageStatus::as_str`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MessageStatus {
    /// Accepted for a later time (schedule_message); the scheduler sends it when due.
    Scheduled,
    /// Accepted and waiting for a dispatcher.
    Queued,
    /// Claimed by a dispatcher: the platform call is (or was) under way.
    Sending,
    /// The platform accepted it.
    Sent,
    /// The platform delivered it to the customer's device.
    Delivered,
    /// The customer read it.
    Read,
    /// It will not be delivered (the reason is stored beside it).
    Failed,
    /// An inbound message from a customer.
    Received,
}

/// A stored status spelling this crate does not know.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown message status {0:?}")]
pub struct UnknownMessageStatus(
    /// The spelling read.
    pub String,
);

impl MessageStatus {
    /// Every status, in progress order of outbound messages (then `received`).
    pub const ALL: [MessageStatus; 8] = [
        MessageStatus::Scheduled,
        MessageStatus::Queued,
        MessageStatus::Sending,
        MessageStatus::Sent,
        MessageStatus::Failed,
        MessageStatus::Delivered,
        MessageStatus::Read,
        MessageStatus::Received,
    ];

    /// The stored (and reported) spelling.
    pub const fn as_str(self) -> &'static str {
        match self {
            MessageStatus::Scheduled => "scheduled",
            MessageStatus::Queued => "queued",
            MessageStatus::Sending => "sending",
            MessageStatus::Sent => "sent",
            MessageStatus::Delivered => "delivered",
            MessageStatus::Read => "read",
            MessageStatus::Failed => "failed",
            MessageStatus::Received => "received",
        }
    }

    /// Progress rank of a delivery status; `failed` may follow `sent` but not
    /// `delivered`/`read`.
    pub const fn rank(self) -> u8 {
        match self {
            MessageStatus::Scheduled | MessageStatus::Received => 0,
            MessageStatus::Queued => 1,
            MessageStatus::Sending => 2,
            MessageStatus::Sent => 3,
            MessageStatus::Failed => 4,
            MessageStatus::Delivered => 5,
            MessageStatus::Read => 6,
        }
    }

    /// Whether moving from `self` to `to` is forward progress.
    pub const fn advances_to(self, to: MessageStatus) -> bool {
        to.rank() > self.rank()
    }

    /// The platform has it: sent, delivered or read.
    pub const fn is_sent(self) -> bool {
        matches!(
            self,
            MessageStatus::Sent | MessageStatus::Delivered | MessageStatus::Read
        )
    }

    /// It reached the customer's device: delivered or read.
    pub const fn is_delivered(self) -> bool {
        matches!(self, MessageStatus::Delivered | MessageStatus::Read)
    }

    /// Waiting for, or in, a platform call: queued or sending.
    pub const fn is_pending(self) -> bool {
        matches!(self, MessageStatus::Queued | MessageStatus::Sending)
    }
}

impl FromStr for MessageStatus {
    type Err = UnknownMessageStatus;

    /// The stored spelling exactly (statuses are written by Warden, never typed by agents).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        MessageStatus::ALL
            .into_iter()
            .find(|st| st.as_str() == s)
            .ok_or_else(|| UnknownMessageStatus(s.to_owned()))
    }
}

impl fmt::Display for MessageStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Compares with the stored spelling (rows read as text, tests).
impl PartialEq<&str> for MessageStatus {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl TryFrom<&str> for MessageStatus {
    type Error = UnknownMessageStatus;

    fn try_from(s: &str) -> Result<Self, Self::Error> {
        s.parse()
    }
}

impl TryFrom<String> for MessageStatus {
    type Error = UnknownMessageStatus;

    fn try_from(s: String) -> Result<Self, Self::Error> {
        s.parse()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use MessageStatus::*;

    #[test]
    fn spellings_round_trip() {
        for s in MessageStatus::ALL {
            assert_eq!(s.as_str().parse::<MessageStatus>(), Ok(s));
            assert_eq!(s.to_string(), s.as_str());
        }
        assert!("SENT".parse::<MessageStatus>().is_err());
        assert!("deleted".parse::<MessageStatus>().is_err());
    }

    #[test]
    fn statuses_only_move_forward() {
        assert!(Queued.advances_to(Sent));
        assert!(Sent.advances_to(Delivered));
        assert!(Delivered.advances_to(Read));
        assert!(Sent.advances_to(Failed));
        assert!(Sending.advances_to(Read));
        assert!(!Read.advances_to(Delivered));
        assert!(!Delivered.advances_to(Sent));
        assert!(!Delivered.advances_to(Failed));
        assert!(!Failed.advances_to(Failed));
    }
}
