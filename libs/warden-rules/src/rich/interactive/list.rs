//! `list`: up to ten rows, in sections, behind a button.

use std::collections::HashSet;

use serde::{Deserialize, Serialize};

use super::ProductItem;
use crate::rich::{
    MAX_BUTTON_TITLE_CHARS, MAX_LIST_ROWS, MAX_ROW_DESCRIPTION_CHARS, MAX_ROW_ID_CHARS,
    MAX_ROW_TITLE_CHARS, MAX_SECTIONS, RichError, err, text,
};
use crate::text::TextKind;

/// A list row.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Row {
    /// Echoed in the customer's list reply.
    pub id: String,
    /// At most 24 characters.
    pub title: String,
    /// At most 72 characters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// A list section.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Section {
    /// Required when there are several sections; at most 24 characters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The rows (a list's; a product_list's sections have none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rows: Vec<Row>,
    /// A product_list's products (see `product_list.rs`; a list's sections have none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub product_items: Option<Vec<ProductItem>>,
}

/// The action of a `list` message: `{"button": label, "sections": [...]}`.
#[derive(Debug, Clone, PartialEq)]
pub struct ListAction {
    /// The label of the button that opens the list (send_interactive's `button_label`).
    pub button: String,
    /// 1 to 10 sections, 1 to 10 rows over all of them, row ids unique.
    pub sections: Vec<Section>,
}

impl ListAction {
    pub(super) fn validate(&self) -> Result<(), RichError> {
        text(
            "button_label",
            &self.button,
            MAX_BUTTON_TITLE_CHARS,
            TextKind::Plain,
        )?;
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
        let rows: usize = sections.iter().map(|s| s.rows.len()).sum();
        if rows == 0 || rows > MAX_LIST_ROWS {
            return Err(err(
                "sections",
                format!("has {rows} rows in all; between 1 and {MAX_LIST_ROWS} are allowed"),
            ));
        }
        // Row ids are unique over the whole list, not per section.
        let mut ids = HashSet::new();
        for (s, section) in sections.iter().enumerate() {
            section.validate(s, sections.len() > 1, &mut ids)?;
        }
        Ok(())
    }
}

impl Section {
    /// Section `s`; `ids` holds the row ids of the sections before it.
    fn validate<'a>(
        &'a self,
        s: usize,
        several: bool,
        ids: &mut HashSet<&'a str>,
    ) -> Result<(), RichError> {
        match &self.title {
            Some(t) => text(
                &format!("sections[{s}].title"),
                t,
                MAX_ROW_TITLE_CHARS,
                TextKind::Plain,
            )?,
            None if several => {
                return Err(err(
                    format!("sections[{s}].title"),
                    "is required when there are several sections",
                ));
            }
            None => {}
        }
        if self.rows.is_empty() {
            return Err(err(format!("sections[{s}].rows"), "must not be empty"));
        }
        for (r, row) in self.rows.iter().enumerate() {
            let at = format!("sections[{s}].rows[{r}]");
            row.validate(&at)?;
            if !ids.insert(row.id.as_str()) {
                return Err(err(
                    format!("{at}.id"),
                    format!("repeats the id {:?}; row ids must be unique", row.id),
                ));
            }
        }
        Ok(())
    }
}

impl Row {
    /// The row at `at` (`sections[s].rows[r]`).
    fn validate(&self, at: &str) -> Result<(), RichError> {
        text(
            &format!("{at}.id"),
            &self.id,
            MAX_ROW_ID_CHARS,
            TextKind::Plain,
        )?;
        text(
            &format!("{at}.title"),
            &self.title,
            MAX_ROW_TITLE_CHARS,
            TextKind::Plain,
        )?;
        match &self.description {
            Some(d) => text(
                &format!("{at}.description"),
                d,
                MAX_ROW_DESCRIPTION_CHARS,
                TextKind::Plain,
            ),
            None => Ok(()),
        }
    }
}
