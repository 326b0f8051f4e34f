//! A platform refusal (HTTP status and the platform's error body) and the platform's
//! titles of its error codes.

use warden_platform::error::ErrorBody;

/// A platform refusal, ready to answer with.
#[derive(Debug, Clone)]
pub struct Refusal {
    pub http_status: u16,
    /// Boxed: refusals are rare, and a small Err keeps the send path's Result small.
    pub body: Box<ErrorBody>,
}

impl Refusal {
    pub fn new(http_status: u16, code: i64, details: impl Into<String>) -> Self {
        let mut body = ErrorBody::new(code, message_for(code), Some(details.into()));
        body.error.fbtrace_id = Some(fbtrace_id());
        Self {
            http_status,
            body: Box::new(body),
        }
    }

    /// 130429: the number's throughput is used up for this second.
    pub fn throughput(number: &super::Number) -> Self {
        let mps = number.phone().throughput_mps.unwrap_or(0);
        Self::new(
            400,
            130429,
            format!(
                "Cloud API message throughput has been reached for phone number {} ({mps} messages per second)",
                number.id()
            ),
        )
    }

    /// The platform's answer to a missing token, or one that is not this object's.
    pub fn unauthorized() -> Self {
        Self::new(
            401,
            190,
            "Invalid OAuth access token: missing or wrong bearer token",
        )
    }

    pub fn with_subcode(mut self, subcode: i64) -> Self {
        self.body.error.error_subcode = Some(subcode);
        self
    }
}

/// The platform's message for a code, `(#code) Title` like the real API.
pub fn message_for(code: i64) -> String {
    format!("(#{code}) {}", title_for(code))
}

pub fn title_for(code: i64) -> &'static str {
    match code {
        0 => "AuthException",
        4 => "Too many calls",
        10 => "Permission denied",
        100 => "Invalid parameter",
        190 => "Invalid OAuth access token - Cannot parse access token",
        200 => "Permission error",
        368 => "Temporarily blocked for policies violations",
        470 => {
            "Message failed to send because more than 24 hours have passed since the customer last replied to this number"
        }
        80007 => "Rate limit issues",
        2494191 => "Thread control take is not permitted for this app",
        130429 => "Rate limit hit",
        130472 => "User's number is part of an experiment",
        131000 => "Something went wrong",
        131005 => "Access denied",
        131008 => "Required parameter is missing",
        131009 => "Parameter value is not valid",
        131016 => "Service unavailable",
        131021 => "Recipient cannot be sender",
        131026 => "Message undeliverable",
        131031 => "Account has been locked",
        131042 => "Business eligibility payment issue",
        131045 => "Incorrect certificate",
        131047 => "Re-engagement message",
        131048 => "Spam rate limit hit",
        131049 => "This message was not delivered to maintain healthy ecosystem engagement",
        131050 => {
            "Unable to deliver the message. This recipient has chosen to stop receiving marketing messages on WhatsApp from your business"
        }
        131051 => "Unsupported message type",
        131052 => "Media download error",
        131053 => "Media upload error",
        131056 => "(Business Account, Consumer Account) pair rate limit hit",
        131057 => "Account in maintenance mode",
        132000 => "Number of parameters does not match the expected number of params",
        132001 => "Template name does not exist in the translation",
        132005 => "Translated text too long",
        132007 => "Template Format Character Policy Violated",
        132012 => "Parameter format does not match format in the created template",
        132015 => "Template is Paused",
        132016 => "Template is Disabled",
        133010 => "Phone number Not Registered",
        135000 => "Generic user error",
        _ => "Error",
    }
}

fn fbtrace_id() -> String {
    let n: u64 = rand::random();
    format!("A{n:016x}")
}
