//! A customer's permission for a business number to call them, from their answers to call
//! permission requests, and how many requests a number may send them.
//!
//! The platform answers a request with `call_permission_reply` (`accept` or `reject`,
//! permanent or until `expiration_timestamp`). What a stored answer means at a moment is
//! [`status`]: a temporary grant that ran out reads as no answer at all. Answers can arrive
//! out of order; [`replaces`] says whether one may overwrite the stored one.

use chrono::{DateTime, TimeDelta, Utc};

/// Requests to one customer from one number within [`REQUEST_WINDOW`] that Warden lets
/// through; the next is refused before the platform refuses it.
pub const MAX_REQUESTS: i64 = 2;

/// The period [`MAX_REQUESTS`] counts over.
pub const REQUEST_WINDOW: TimeDelta = TimeDelta::hours(24);

/// The customer's answer to a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Response {
    /// The business may call.
    Accept,
    /// The business may not.
    Reject,
}

impl Response {
    /// The platform's spelling, `accept` or `reject` (also accepted: `approve`).
    pub fn parse(s: &str) -> Option<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "accept" | "approve" => Some(Self::Accept),
            "reject" => Some(Self::Reject),
            _ => None,
        }
    }

    /// As stored: `accept` or `reject`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Accept => "accept",
            Self::Reject => "reject",
        }
    }
}

/// What a customer's permission is now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// The business may call (a permanent grant, or one not expired yet).
    Granted,
    /// The customer said no.
    Rejected,
    /// No answer, or a temporary grant that ran out.
    None,
}

impl Status {
    /// `granted`, `rejected` or `none`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Granted => "granted",
            Self::Rejected => "rejected",
            Self::None => "none",
        }
    }
}

/// A stored answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Answer {
    /// What the customer answered.
    pub response: Response,
    /// The answer holds until the customer changes it.
    pub permanent: bool,
    /// When a temporary grant ends (none: permanent, or a rejection).
    pub expires_at: Option<DateTime<Utc>>,
}

/// The permission at `now` that `answer` (the latest, if any) gives. A temporary grant with
/// no end is read as ended: the platform always says when a temporary grant ends.
pub fn status(answer: Option<&Answer>, now: DateTime<Utc>) -> Status {
    match answer {
        None => Status::None,
        Some(a) if a.response == Response::Reject => Status::Rejected,
        Some(a) if a.permanent => Status::Granted,
        Some(a) => match a.expires_at {
            Some(end) if end > now => Status::Granted,
            _ => Status::None,
        },
    }
}

/// Whether an answer given at `incoming` replaces the stored one given at `stored`: never
/// when it is older (a webhook that arrived late); a tie goes to the later arrival.
pub fn replaces(stored: Option<DateTime<Utc>>, incoming: DateTime<Utc>) -> bool {
    stored.is_none_or(|s| incoming >= s)
}

/// Whether one more request may go out after `sent` requests within [`REQUEST_WINDOW`].
pub fn request_allowed(sent: i64) -> bool {
    sent < MAX_REQUESTS
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_800_000_000 + s, 0).unwrap()
    }

    #[test]
    fn a_temporary_grant_reads_none_once_it_ends() {
        let grant = Answer {
            response: Response::Accept,
            permanent: false,
            expires_at: Some(at(100)),
        };
        assert_eq!(status(Some(&grant), at(99)), Status::Granted);
        assert_eq!(status(Some(&grant), at(100)), Status::None);
        let open_ended = Answer {
            expires_at: None,
            ..grant
        };
        assert_eq!(status(Some(&open_ended), at(0)), Status::None);
        let permanent = Answer {
            permanent: true,
            expires_at: None,
            ..grant
        };
        assert_eq!(status(Some(&permanent), at(1_000_000)), Status::Granted);
        let no = Answer {
            response: Response::Reject,
            ..permanent
        };
        assert_eq!(status(Some(&no), at(0)), Status::Rejected);
        assert_eq!(status(None, at(0)), Status::None);
    }

    #[test]
    fn an_older_answer_never_replaces_a_newer_one() {
        assert!(replaces(None, at(0)));
        assert!(replaces(Some(at(0)), at(1)));
        assert!(replaces(Some(at(1)), at(1)));
        assert!(!replaces(Some(at(2)), at(1)));
    }

    #[test]
    fn two_requests_a_day() {
        assert!(request_allowed(0));
        assert!(request_allowed(1));
        assert!(!request_allowed(2));
        assert_eq!(Response::parse(" Accept "), Some(Response::Accept));
        assert_eq!(Response::parse("maybe"), None);
    }
}
