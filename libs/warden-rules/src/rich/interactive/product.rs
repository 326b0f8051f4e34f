//! `product`: one product of a catalog (the platform's single-product message).

use crate::rich::{RichError, text};
use crate::text::TextKind;

/// Longest catalog id or product retailer id (the platform gives no smaller bound; this
/// keeps a stored body small).
pub const MAX_PRODUCT_ID_CHARS: usize = 100;

/// The action of a `product` message: `{"catalog_id", "product_retailer_id"}`.
#[derive(Debug, Clone, PartialEq)]
pub struct ProductAction {
    /// The catalog the product is in.
    pub catalog_id: String,
    /// The product's id in that catalog (its SKU).
    pub product_retailer_id: String,
}

impl ProductAction {
    pub(super) fn validate(&self) -> Result<(), RichError> {
        catalog_id(&self.catalog_id)?;
        product_id("product_retailer_id", &self.product_retailer_id)
    }
}

/// A catalog id: not empty, at most [`MAX_PRODUCT_ID_CHARS`], no control character.
pub(super) fn catalog_id(value: &str) -> Result<(), RichError> {
    text("catalog_id", value, MAX_PRODUCT_ID_CHARS, TextKind::Plain)
}

/// A product retailer id at `field`.
pub(super) fn product_id(field: &str, value: &str) -> Result<(), RichError> {
    text(field, value, MAX_PRODUCT_ID_CHARS, TextKind::Plain)
}
