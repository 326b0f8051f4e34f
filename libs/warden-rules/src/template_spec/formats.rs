//! The template formats beyond header, body, footer and buttons: a carousel of cards, a
//! limited-time offer and an authentication template. Each format's rules live in its own
//! file; [`TemplateFormat`] is what [`TemplateSpec`] calls at its three hooks (validate,
//! to_components, from_components).

use serde_json::Value;

use super::{SpecError, TemplateSpec};
use crate::kinds::TemplateCategory;

pub mod authentication;
pub mod carousel;
pub mod offer;

pub use authentication::{Authentication, OtpType};
pub use carousel::{Card, Carousel};
pub use offer::LimitedTimeOffer;

/// Which format a template is.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum TemplateFormat {
    /// Header, body, footer and buttons only.
    #[default]
    Standard,
    /// 2 to 10 cards after the body (MARKETING only).
    Carousel(Carousel),
    /// An offer with an optional countdown (MARKETING only).
    LimitedTimeOffer(LimitedTimeOffer),
    /// A one-time code whose body the platform writes (AUTHENTICATION only).
    Authentication(Authentication),
}

impl TemplateFormat {
    /// The format's own rules, after the spec's common ones passed.
    pub fn validate(
        &self,
        spec: &TemplateSpec,
        category: TemplateCategory,
    ) -> Result<(), SpecError> {
        match self {
            Self::Standard => Ok(()),
            Self::Carousel(c) => c.validate(spec, category),
            Self::LimitedTimeOffer(o) => o.validate(spec, category),
            Self::Authentication(a) => a.validate(spec, category),
        }
    }

    /// The create request's components: the common ones (`common`, as the spec wrote
    /// them) with the format's added or rewritten.
    pub fn shape_components(&self, spec: &TemplateSpec, common: Vec<Value>) -> Vec<Value> {
        match self {
            Self::Standard => common,
            Self::Carousel(c) => c.shape_components(common),
            Self::LimitedTimeOffer(o) => o.shape_components(common),
            Self::Authentication(a) => a.components(spec),
        }
    }

    /// Reads the format back from a template's components (as written by
    /// [`Self::shape_components`] or listed by the platform).
    pub fn read(components: &[Value]) -> Result<Self, SpecError> {
        if let Some(c) = find(components, "CAROUSEL") {
            return Carousel::read(c).map(Self::Carousel);
        }
        if let Some(c) = find(components, "LIMITED_TIME_OFFER") {
            return Ok(Self::LimitedTimeOffer(LimitedTimeOffer::read(c)));
        }
        Ok(Authentication::read(components).map_or(Self::Standard, Self::Authentication))
    }

    /// The carousel, when the template is one.
    pub fn carousel(&self) -> Option<&Carousel> {
        match self {
            Self::Carousel(c) => Some(c),
            _ => None,
        }
    }

    /// The offer, when the template is one.
    pub fn offer(&self) -> Option<&LimitedTimeOffer> {
        match self {
            Self::LimitedTimeOffer(o) => Some(o),
            _ => None,
        }
    }

    /// The authentication settings, when the template is one.
    pub fn authentication(&self) -> Option<&Authentication> {
        match self {
            Self::Authentication(a) => Some(a),
            _ => None,
        }
    }
}

/// The component of type `kind` (any case).
pub(crate) fn find<'a>(components: &'a [Value], kind: &str) -> Option<&'a Value> {
    components.iter().find(|c| {
        c.get("type")
            .and_then(Value::as_str)
            .is_some_and(|t| t.eq_ignore_ascii_case(kind))
    })
}

/// Refuses `field` on a template of format `what` (which has no such part).
pub(crate) fn not_allowed(field: &str, what: &str) -> SpecError {
    super::err(field, format!("is not allowed in {what}"))
}

#[cfg(test)]
#[path = "formats_tests.rs"]
mod tests;
