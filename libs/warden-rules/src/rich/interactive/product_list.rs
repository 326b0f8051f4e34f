//! `product_list`: up to thirty products of one catalog, in titled sections.

use std::collections::HashSet;

use serde::{Deserialize, Serialize};

use super::product::{catalog_id, product_id};
use crate::rich::{MAX_ROW_TITLE_CHARS, MAX_SECTIONS, RichError, err, text};
use crate::text::TextKind;

/// Products of a product list, over all its sections.
pub const MAX_PRODUCT_ITEMS: usize = 30;

/// One product of a product list section.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProductItem {
    /// The product's id in the catalog.
    pub product_retailer_id: String,
}

/// A section of a product list: its title (required, at most 24 characters) and products.
#[derive(Debug, Clone, PartialEq)]
pub struct ProductSection {
    /// At most 24 characters.
    pub title: String,
    /// The section's products.
    pub product_items: Vec<ProductItem>,
}

/// The action of a `product_list` message: `{"catalog_id", "sections": [{"title",
/// "product_items": [...]}]}`.
#[derive(Debug, Clone, PartialEq)]
pub struct ProductListAction {
    /// The catalog every product is in.
    pub catalog_id: String,
    /// 1 to 10 sections, 1 to 30 products over all of them, ids unique.
    pub sections: Vec<ProductSection>,
}

impl ProductListAction {
    pub(super) fn validate(&self) -> Result<(), RichError> {
        catalog_id(&self.catalog_id)?;
        let sections = &self.sections;
        if sections.is_empty() || sections.len() > MAX_SECTIONS {
            return Err(err(
                "sections",
                format!(
                    "has {} sections; between 1 and {MAX_SECTIONS} are allowed",
                    sections.len()
                ),
            ));
        }
        let items: usize = sections.iter().map(|s| s.product_items.len()).sum();
        if items == 0 || items > MAX_PRODUCT_ITEMS {
            return Err(err(
                "sections",
                format!(
                    "has {items} products in all; between 1 and {MAX_PRODUCT_ITEMS} are allowed"
                ),
            ));
        }
        // Product ids are unique over the whole list, not per section.
        let mut ids = HashSet::new();
        for (s, section) in sections.iter().enumerate() {
            section.validate(s, &mut ids)?;
        }
        Ok(())
    }
}

impl ProductSection {
    /// Section `s`; `ids` holds the product ids of the sections before it.
    fn validate<'a>(&'a self, s: usize, ids: &mut HashSet<&'a str>) -> Result<(), RichError> {
        text(
            &format!("sections[{s}].title"),
            &self.title,
            MAX_ROW_TITLE_CHARS,
            TextKind::Plain,
        )?;
        if self.product_items.is_empty() {
            return Err(err(
                format!("sections[{s}].product_items"),
                "must not be empty",
            ));
        }
        for (i, item) in self.product_items.iter().enumerate() {
            let at = format!("sections[{s}].product_items[{i}].product_retailer_id");
            product_id(&at, &item.product_retailer_id)?;
            if !ids.insert(item.product_retailer_id.as_str()) {
                return Err(err(
                    at,
                    format!(
                        "repeats {:?}; each product appears once in a list",
                        item.product_retailer_id
                    ),
                ));
            }
        }
        Ok(())
    }
}
