//! The Marketing Messages API's product policy of a sender (the senders file's
//! `marketing_product_policy`).

use std::fmt;

/// What the Marketing Messages API does with a message it cannot send itself.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum ProductPolicy {
    /// Send it through the Cloud API instead (the platform's default).
    #[default]
    CloudApiFallback,
    /// Do not send it.
    Strict,
}

impl ProductPolicy {
    /// `CLOUD_API_FALLBACK` or `STRICT` (exactly, as the platform spells them).
    pub fn parse(s: &str) -> Option<Self> {
        match s.trim() {
            "CLOUD_API_FALLBACK" => Some(Self::CloudApiFallback),
            "STRICT" => Some(Self::Strict),
            _ => None,
        }
    }

    /// The platform's spelling (the send body's `product_policy`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::CloudApiFallback => "CLOUD_API_FALLBACK",
            Self::Strict => "STRICT",
        }
    }
}

impl fmt::Display for ProductPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
