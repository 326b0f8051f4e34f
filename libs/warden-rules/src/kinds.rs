//! Message types, template categories, the effective category and the channel.
//!
//! Agents type these in any case (`MARKETING`, `Marketing`), so every parser here is
//! case-insensitive and trims. The category a rule applies comes from the content
//! ([`ContentKind`]), never from the caller's `message_type`.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The only channel the service has.
pub const DEFAULT_CHANNEL: &str = "whatsapp";

/// Why a type, category or channel was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KindError {
    /// Not one of marketing, utility, authentication, service, text, template.
    #[error(
        "unknown message_type {0:?}; use marketing, utility, authentication, service (or text) or template"
    )]
    UnknownMessageType(String),
    /// Not one of the template categories.
    #[error("unknown template category {0:?}; use MARKETING, UTILITY or AUTHENTICATION")]
    UnknownTemplateCategory(String),
    /// Not one of the rule categories.
    #[error("unknown category {0:?}; use marketing, utility, authentication or service")]
    UnknownCategory(String),
    /// `template` given where a concrete category is needed.
    #[error(
        "message_type template has no category of its own; use the template's category (marketing, utility or authentication)"
    )]
    TemplateIsNotACategory,
    /// A template send without the template's category.
    #[error("a template send is judged by its template's category, which was not given")]
    TemplateCategoryMissing,
    /// Any channel but whatsapp.
    #[error("unsupported channel {0:?}; the only channel is \"whatsapp\"")]
    UnsupportedChannel(String),
}

/// What the caller says it is sending.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MessageType {
    /// Promotional content; needs a marketing template outside the window.
    Marketing,
    /// Transactional updates (orders, accounts).
    Utility,
    /// One-time codes.
    Authentication,
    /// Free-form reply inside the care window (`text` is an alias).
    Service,
    /// A template send; judged by the template's category.
    Template,
}

impl MessageType {
    /// Lower-case name, as stored and reported.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Marketing => "marketing",
            Self::Utility => "utility",
            Self::Authentication => "authentication",
            Self::Service => "service",
            Self::Template => "template",
        }
    }
}

/// What a message carries. It alone decides the rule category (docs/compliance.md):
/// free-form content needs the care window whatever the caller calls it, and
/// a template is judged by its **stored** category, never by the caller's `message_type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ContentKind {
    /// Free text (no template): a service message.
    FreeForm,
    /// A template, with the category stored for it.
    Template(TemplateCategory),
}

impl ContentKind {
    /// The category the rules judge this content by.
    pub fn category(self) -> Category {
        match self {
            Self::FreeForm => Category::Service,
            Self::Template(t) => Category::from(t),
        }
    }
}

impl MessageType {
    /// check_compliance has no content, only the caller's description of it: `service`
    /// is free-form, `marketing`/`utility`/`authentication` a template of that category,
    /// `template` the least restricted template category (utility).
    pub fn described_content(self) -> ContentKind {
        match self {
            Self::Service => ContentKind::FreeForm,
            Self::Marketing => ContentKind::Template(TemplateCategory::Marketing),
            Self::Utility | Self::Template => ContentKind::Template(TemplateCategory::Utility),
            Self::Authentication => ContentKind::Template(TemplateCategory::Authentication),
        }
    }
}

impl FromStr for MessageType {
    type Err = KindError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "marketing" => Ok(Self::Marketing),
            "utility" => Ok(Self::Utility),
            "authentication" => Ok(Self::Authentication),
            "service" | "text" => Ok(Self::Service),
            "template" => Ok(Self::Template),
            _ => Err(KindError::UnknownMessageType(s.to_string())),
        }
    }
}

/// A template's category as the platform knows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TemplateCategory {
    /// Promotional templates.
    Marketing,
    /// Transactional templates.
    Utility,
    /// One-time-code templates.
    Authentication,
}

impl TemplateCategory {
    /// `marketing`, as stored in listings.
    pub fn as_lower(self) -> &'static str {
        match self {
            Self::Marketing => "marketing",
            Self::Utility => "utility",
            Self::Authentication => "authentication",
        }
    }

    /// `MARKETING`, as the platform API wants it on create.
    pub fn as_upper(self) -> &'static str {
        match self {
            Self::Marketing => "MARKETING",
            Self::Utility => "UTILITY",
            Self::Authentication => "AUTHENTICATION",
        }
    }
}

impl FromStr for TemplateCategory {
    type Err = KindError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "marketing" => Ok(Self::Marketing),
            "utility" => Ok(Self::Utility),
            "authentication" => Ok(Self::Authentication),
            _ => Err(KindError::UnknownTemplateCategory(s.to_string())),
        }
    }
}

/// The effective category a rule looks at: what is really being sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Category {
    /// Free-form reply inside the care window.
    Service,
    /// Promotional.
    Marketing,
    /// Transactional.
    Utility,
    /// One-time codes.
    Authentication,
}

impl Category {
    /// Every category, in a stable order.
    pub const ALL: [Category; 4] = [
        Category::Marketing,
        Category::Utility,
        Category::Authentication,
        Category::Service,
    ];

    /// Lower-case name, as stored, reported and written in policy files.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Service => "service",
            Self::Marketing => "marketing",
            Self::Utility => "utility",
            Self::Authentication => "authentication",
        }
    }

    /// True for free-form messages, the only ones the care window restricts.
    pub fn is_free_form(self) -> bool {
        self == Self::Service
    }
}

impl From<TemplateCategory> for Category {
    fn from(t: TemplateCategory) -> Self {
        match t {
            TemplateCategory::Marketing => Self::Marketing,
            TemplateCategory::Utility => Self::Utility,
            TemplateCategory::Authentication => Self::Authentication,
        }
    }
}

impl FromStr for Category {
    type Err = KindError;
    /// Accepts the four names and `text` (= service), case-insensitively; `template`
    /// is refused because a template send has no category of its own.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "marketing" => Ok(Self::Marketing),
            "utility" => Ok(Self::Utility),
            "authentication" => Ok(Self::Authentication),
            "service" | "text" => Ok(Self::Service),
            "template" => Err(KindError::TemplateIsNotACategory),
            _ => Err(KindError::UnknownCategory(s.to_string())),
        }
    }
}

macro_rules! string_serde {
    ($t:ty, $name:ident) => {
        impl fmt::Display for $t {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.$name())
            }
        }
        impl Serialize for $t {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(self.$name())
            }
        }
        impl<'de> Deserialize<'de> for $t {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let raw = String::deserialize(deserializer)?;
                raw.parse().map_err(serde::de::Error::custom)
            }
        }
    };
}

string_serde!(MessageType, as_str);
string_serde!(TemplateCategory, as_lower);
string_serde!(Category, as_str);

/// Validates a tool's `channel` parameter: absent or empty means `whatsapp`;
/// `whatsapp` in any case is accepted; anything else is refused.
pub fn parse_channel(channel: Option<&str>) -> Result<&'static str, KindError> {
    match channel.map(str::trim) {
        None | Some("") => Ok(DEFAULT_CHANNEL),
        Some(c) if c.eq_ignore_ascii_case(DEFAULT_CHANNEL) => Ok(DEFAULT_CHANNEL),
        Some(c) => Err(KindError::UnsupportedChannel(c.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn message_types_are_case_insensitive() {
        for (s, t) in [
            ("marketing", MessageType::Marketing),
            ("MARKETING", MessageType::Marketing),
            ("Utility", MessageType::Utility),
            (" authentication ", MessageType::Authentication),
            ("Service", MessageType::Service),
            ("TEXT", MessageType::Service),
            ("tEmPlAtE", MessageType::Template),
        ] {
            assert_eq!(s.parse::<MessageType>().unwrap(), t, "{s}");
        }
        assert!("promo".parse::<MessageType>().is_err());
        assert!("".parse::<MessageType>().is_err());
        assert!(
            "promo"
                .parse::<MessageType>()
                .unwrap_err()
                .to_string()
                .contains("\"promo\"")
        );
    }

    #[test]
    fn content_not_label_decides_the_category() {
        assert_eq!(ContentKind::FreeForm.category(), Category::Service);
        for t in [
            TemplateCategory::Marketing,
            TemplateCategory::Utility,
            TemplateCategory::Authentication,
        ] {
            assert_eq!(ContentKind::Template(t).category(), Category::from(t));
        }
        assert_eq!(
            MessageType::Template.described_content(),
            ContentKind::Template(TemplateCategory::Utility)
        );
        assert_eq!(
            MessageType::Service.described_content(),
            ContentKind::FreeForm
        );
        assert_eq!(
            MessageType::Marketing.described_content().category(),
            Category::Marketing
        );
    }

    #[test]
    fn template_categories() {
        let c: TemplateCategory = "MARKETING".parse().unwrap();
        assert_eq!(c, TemplateCategory::Marketing);
        assert_eq!(c.as_lower(), "marketing");
        assert_eq!(c.as_upper(), "MARKETING");
        assert_eq!(
            "authentication"
                .parse::<TemplateCategory>()
                .unwrap()
                .as_upper(),
            "AUTHENTICATION"
        );
        assert!("service".parse::<TemplateCategory>().is_err());
    }

    #[test]
    fn categories() {
        assert_eq!("TEXT".parse::<Category>().unwrap(), Category::Service);
        assert_eq!(
            "template".parse::<Category>(),
            Err(KindError::TemplateIsNotACategory)
        );
        assert!(Category::Service.is_free_form());
        assert!(!Category::Marketing.is_free_form());
        let json = serde_json::to_string(&Category::Authentication).unwrap();
        assert_eq!(json, "\"authentication\"");
        let back: Category = serde_json::from_str("\"Utility\"").unwrap();
        assert_eq!(back, Category::Utility);
    }

    #[test]
    fn channels() {
        assert_eq!(parse_channel(None).unwrap(), "whatsapp");
        assert_eq!(parse_channel(Some("")).unwrap(), "whatsapp");
        assert_eq!(parse_channel(Some("  ")).unwrap(), "whatsapp");
        assert_eq!(parse_channel(Some("WhatsApp")).unwrap(), "whatsapp");
        assert_eq!(
            parse_channel(Some("sms")),
            Err(KindError::UnsupportedChannel("sms".into()))
        );
    }
}
