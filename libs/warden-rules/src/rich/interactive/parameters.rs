//! The action's `parameters` as written: a CTA's `{display_text, url}`, a flow's
//! `{flow_message_version, flow_token, ...}` or a catalog message's
//! `{thumbnail_product_retailer_id?}`.
//!
//! One key, three shapes. It is told apart by its keys rather than tried shape by shape
//! (serde's `untagged`), so a broken CTA is still refused with the CTA's own message
//! ("missing field `url`"), as before the catalog kind existed.

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use super::catalog::CatalogParameters;
use super::cta_url::CtaParameters;
use super::flow::FlowParameters;

/// `parameters` of a `cta_url`, `flow` or `catalog_message` action.
#[derive(Debug, Clone, PartialEq)]
pub enum Parameters {
    /// A CTA URL button's text and url.
    Cta(CtaParameters),
    /// Which flow opens where (`flow`).
    Flow(FlowParameters),
    /// A catalog message's thumbnail.
    Catalog(CatalogParameters),
}

impl Serialize for Parameters {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Cta(p) => p.serialize(s),
            Self::Flow(p) => p.serialize(s),
            Self::Catalog(p) => p.serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for Parameters {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = Value::deserialize(d)?;
        // A flow's always carry its message version.
        if v.get("flow_message_version").is_some() {
            return serde_json::from_value(v)
                .map(Self::Flow)
                .map_err(D::Error::custom);
        }
        // A CTA names its text or url; anything else (the thumbnail, or nothing) is a
        // catalog's, and a stray key is refused by that shape's own reader.
        let cta = v
            .as_object()
            .is_none_or(|o| o.contains_key("display_text") || o.contains_key("url"));
        if cta {
            serde_json::from_value(v)
                .map(Self::Cta)
                .map_err(D::Error::custom)
        } else {
            serde_json::from_value(v)
                .map(Self::Catalog)
                .map_err(D::Error::custom)
        }
    }
}
