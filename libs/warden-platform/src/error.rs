//! The platform's error body and the client's error type.

use crate::lenient;
use serde::{Deserialize, Serialize};

/// `{"error": {...}}`, the body of every refused API call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorBody {
    pub error: ApiError,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ApiError {
    #[serde(default)]
    pub message: String,
    /// `OAuthException` and the like.
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    #[serde(deserialize_with = "lenient::int")]
    pub code: i64,
    #[serde(
        default,
        deserialize_with = "lenient::opt_int",
        skip_serializing_if = "Option::is_none"
    )]
    pub error_subcode: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_data: Option<ErrorData>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fbtrace_id: Option<String>,
}

impl ErrorBody {
    /// A body shaped like the platform's, with `error_data.details` when given.
    pub fn new(code: i64, message: impl Into<String>, details: Option<String>) -> Self {
        Self {
            error: ApiError {
                message: message.into(),
                kind: Some("OAuthException".to_owned()),
                code,
                error_subcode: None,
                error_data: details.map(|d| ErrorData {
                    messaging_product: Some("whatsapp".to_owned()),
                    details: Some(d),
                }),
                fbtrace_id: None,
            },
        }
    }

    /// Parses a response body; `None` when it is not the platform's error shape.
    pub fn parse(body: &[u8]) -> Option<Self> {
        serde_json::from_slice(body).ok()
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ErrorData {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub messaging_product: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<String>,
}

/// Why a platform call did not succeed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PlatformError {
    /// The platform answered with its own error body.
    #[error("platform error {code} (HTTP {http_status}): {message}")]
    Api {
        http_status: u16,
        code: i64,
        message: String,
        details: Option<String>,
    },
    /// A non-success answer that is not the platform's error body (a proxy page,
    /// an empty 502, a success body that does not parse).
    #[error("HTTP {status} from platform: {body}")]
    Http { status: u16, body: String },
    /// No complete answer in time. The request may have reached the platform: the
    /// outcome is unknown, so do not blindly resend.
    #[error("platform call timed out")]
    Timeout,
    /// The connection could not be opened; the request was not sent.
    #[error("cannot connect to platform: {0}")]
    Connect(String),
    /// The connection broke after the request was (possibly) sent: outcome unknown.
    #[error("platform connection failed: {0}")]
    Io(String),
    /// The client could not be built or the request could not be formed.
    #[error("platform client misconfigured: {0}")]
    Config(String),
}

impl PlatformError {
    /// True for failures below HTTP (no answer from the platform at all).
    pub fn is_transport(&self) -> bool {
        matches!(self, Self::Timeout | Self::Connect(_) | Self::Io(_))
    }

    /// True when the request may have reached the platform without an answer
    /// arriving: a resend risks a duplicate.
    pub fn outcome_unknown(&self) -> bool {
        matches!(self, Self::Timeout | Self::Io(_))
    }

    /// The platform error code, when the platform answered with one.
    pub fn code(&self) -> Option<i64> {
        match self {
            Self::Api { code, .. } => Some(*code),
            _ => None,
        }
    }

    /// The HTTP status, when there was an HTTP answer.
    pub fn http_status(&self) -> Option<u16> {
        match self {
            Self::Api { http_status, .. } => Some(*http_status),
            Self::Http { status, .. } => Some(*status),
            _ => None,
        }
    }

    /// Builds the error for a non-success HTTP answer.
    pub fn from_response(status: u16, body: &[u8]) -> Self {
        match ErrorBody::parse(body) {
            Some(ErrorBody { error }) => Self::Api {
                http_status: status,
                code: error.code,
                message: error.message,
                details: error.error_data.and_then(|d| d.details),
            },
            None => {
                // Keep logs and messages short: proxies can answer with whole pages.
                let mut text = String::from_utf8_lossy(body).into_owned();
                if text.len() > 512 {
                    let mut cut = 512;
                    while !text.is_char_boundary(cut) {
                        cut -= 1;
                    }
                    text.truncate(cut);
                }
                Self::Http { status, body: text }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_platform_error_body() {
        let body = br#"{"error":{"message":"(#131026) Message undeliverable","type":"OAuthException",
            "code":"131026","error_data":{"messaging_product":"whatsapp","details":"not on the platform"},
            "fbtrace_id":"Az8or"}}"#;
        let e = PlatformError::from_response(400, body);
        assert_eq!(
            e,
            PlatformError::Api {
                http_status: 400,
                code: 131026,
                message: "(#131026) Message undeliverable".into(),
                details: Some("not on the platform".into())
            }
        );
        assert_eq!(e.code(), Some(131026));
        assert!(!e.is_transport());
    }

    #[test]
    fn non_platform_body_is_http() {
        let e = PlatformError::from_response(502, "<html>bad gateway</html>".as_bytes());
        assert_eq!(e.http_status(), Some(502));
        assert!(matches!(e, PlatformError::Http { .. }));
        let long = "é".repeat(600);
        let PlatformError::Http { body, .. } = PlatformError::from_response(500, long.as_bytes())
        else {
            panic!()
        };
        assert!(body.len() <= 512);
    }

    #[test]
    fn transport_classes() {
        assert!(PlatformError::Timeout.is_transport());
        assert!(PlatformError::Timeout.outcome_unknown());
        assert!(PlatformError::Connect("refused".into()).is_transport());
        assert!(!PlatformError::Connect("refused".into()).outcome_unknown());
    }
}
