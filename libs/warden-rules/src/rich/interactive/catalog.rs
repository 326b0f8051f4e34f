//! `catalog_message`: the business's whole catalog behind a "View catalog" button.

use serde::{Deserialize, Serialize};

use super::product::product_id;
use crate::rich::RichError;

/// The action `name` of a catalog message.
pub(super) const NAME: &str = "catalog_message";

/// A catalog message's parameters: the product whose image is the thumbnail (the
/// platform takes the catalog's first product when none is named).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CatalogParameters {
    /// The product shown as the thumbnail.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thumbnail_product_retailer_id: Option<String>,
}

/// The action of a `catalog_message`: `{"name": "catalog_message", "parameters"?:
/// {"thumbnail_product_retailer_id"}}` (the name is always the same, so it is not held).
#[derive(Debug, Clone, PartialEq)]
pub struct CatalogAction {
    /// The product shown as the thumbnail.
    pub thumbnail_product_retailer_id: Option<String>,
}

impl CatalogAction {
    pub(super) fn validate(&self) -> Result<(), RichError> {
        match &self.thumbnail_product_retailer_id {
            Some(id) => product_id("thumbnail_product_retailer_id", id),
            None => Ok(()),
        }
    }
}
