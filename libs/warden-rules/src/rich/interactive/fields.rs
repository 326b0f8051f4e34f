//! An `interactive` object as written, before its action is known to fit its kind.
//!
//! The platform's `action` is one object whose keys depend on the message's `type`, so it
//! is read as every key any kind uses, each optional, and then taken apart by the kind
//! ([`super::Action`]). Both readers go through it: a stored or scheduled body
//! ([`crate::rich::RichMessage::from_json`]) and send_interactive's parameters. Its serde
//! shape is the stored and sent JSON: changing a name or an order here changes both.
//! The structs keep the names of those they replaced, `Interactive` and `Action`, because
//! serde's errors name them ("expected struct Action") and callers see those errors; they
//! are exported as `InteractiveFields` and `ActionFields`.

use serde::{Deserialize, Serialize};

use super::catalog::NAME as CATALOG_MESSAGE;
use super::cta_url::NAME as CTA_URL;
use super::flow::NAME as FLOW;
use super::{
    ButtonsAction, CallPermissionAction, CatalogAction, CatalogParameters, CtaUrlAction,
    FlowAction, Header, InteractiveType, ListAction, LocationRequestAction, Parameters,
    ProductAction, ProductListAction, ProductSection, ReplyButton, Section, TextObject,
};
use crate::rich::{RichError, err};

/// The platform's `interactive` object as written (`InteractiveFields` outside this file).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Interactive {
    /// `button`, `list` or `cta_url`.
    #[serde(rename = "type")]
    pub kind: InteractiveType,
    /// Optional header.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub header: Option<Header>,
    /// The body text (required but by `product`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<TextObject>,
    /// Optional footer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub footer: Option<TextObject>,
    /// Buttons, rows or the CTA.
    pub action: Action,
}

/// The `action` as written: every key of every kind, each optional (`ActionFields` outside
/// this file).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Action {
    /// Reply buttons (`button`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub buttons: Option<Vec<ReplyButton>>,
    /// The list's button label (`list`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub button: Option<String>,
    /// The list's sections (`list`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sections: Option<Vec<Section>>,
    /// `cta_url` (or `catalog_message`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The CTA's text and url (`cta_url`), or the catalog's thumbnail (`catalog_message`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parameters: Option<Parameters>,
    /// The catalog (`product`, `product_list`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub catalog_id: Option<String>,
    /// The product (`product`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub product_retailer_id: Option<String>,
}

impl Action {
    /// After a kind took its own keys: refuses the first one left, named as
    /// send_interactive names it.
    pub(super) fn refuse_rest(&self) -> Result<(), RichError> {
        let left = [
            (self.buttons.is_some(), "buttons"),
            (self.sections.is_some(), "sections"),
            (self.button.is_some(), "button_label"),
            (
                matches!(self.parameters, Some(Parameters::Flow(_))),
                "flow_cta",
            ),
            (self.name.is_some() || self.parameters.is_some(), "url"),
            (self.catalog_id.is_some(), "catalog_id"),
            (self.product_retailer_id.is_some(), "product_retailer_id"),
        ];
        match left.into_iter().find(|(present, _)| *present) {
            Some((_, field)) => Err(err(
                field,
                "does not belong to this kind of interactive message",
            )),
            None => Ok(()),
        }
    }
}

// Each kind taken from the action as written and written back: beside the form it reads,
// so the kinds' own files never need the form.
impl ButtonsAction {
    pub(super) fn from_fields(mut f: Action) -> Result<Self, RichError> {
        // None given reads as none at all, which `validate` refuses by their count.
        let buttons = f.buttons.take().unwrap_or_default();
        f.refuse_rest()?;
        Ok(Self { buttons })
    }

    pub(super) fn to_fields(&self) -> Action {
        Action {
            buttons: Some(self.buttons.clone()),
            ..Action::default()
        }
    }
}

impl ListAction {
    pub(super) fn from_fields(mut f: Action) -> Result<Self, RichError> {
        let (button, sections) = (f.button.take(), f.sections.take());
        f.refuse_rest()?;
        let button = button.ok_or_else(|| err("button_label", "is required for a list"))?;
        // None given reads as none at all, which `validate` refuses by their count.
        let sections = sections.unwrap_or_default();
        if let Some(s) = sections.iter().position(|s| s.product_items.is_some()) {
            return Err(err(
                format!("sections[{s}].product_items"),
                "belongs to a product_list; a list's sections have rows",
            ));
        }
        Ok(Self { button, sections })
    }

    pub(super) fn to_fields(&self) -> Action {
        Action {
            button: Some(self.button.clone()),
            sections: Some(self.sections.clone()),
            ..Action::default()
        }
    }
}

impl CtaUrlAction {
    pub(super) fn from_fields(mut f: Action) -> Result<Self, RichError> {
        let name = f.name.take();
        let parameters = match f.parameters.take() {
            Some(Parameters::Cta(p)) => Some(p),
            // Left in place for `refuse_rest` to name.
            flow @ Some(Parameters::Flow(_)) => {
                f.parameters = flow;
                None
            }
            // Neither text nor url: refused below as missing both.
            Some(Parameters::Catalog(_)) | None => None,
        };
        f.refuse_rest()?;
        if name.as_deref() != Some(CTA_URL) {
            return Err(err("action.name", "must be \"cta_url\""));
        }
        let parameters =
            parameters.ok_or_else(|| err("url", "and `display_text` are required for cta_url"))?;
        Ok(Self { parameters })
    }

    pub(super) fn to_fields(&self) -> Action {
        Action {
            name: Some(CTA_URL.into()),
            parameters: Some(Parameters::Cta(self.parameters.clone())),
            ..Action::default()
        }
    }
}

impl ProductAction {
    pub(super) fn from_fields(mut f: Action) -> Result<Self, RichError> {
        let (catalog, product) = (f.catalog_id.take(), f.product_retailer_id.take());
        f.refuse_rest()?;
        let catalog_id = catalog.ok_or_else(|| err("catalog_id", "is required for a product"))?;
        let product_retailer_id =
            product.ok_or_else(|| err("product_retailer_id", "is required for a product"))?;
        Ok(Self {
            catalog_id,
            product_retailer_id,
        })
    }

    pub(super) fn to_fields(&self) -> Action {
        Action {
            catalog_id: Some(self.catalog_id.clone()),
            product_retailer_id: Some(self.product_retailer_id.clone()),
            ..Action::default()
        }
    }
}

impl ProductListAction {
    pub(super) fn from_fields(mut f: Action) -> Result<Self, RichError> {
        let (catalog, sections) = (f.catalog_id.take(), f.sections.take());
        f.refuse_rest()?;
        let catalog_id =
            catalog.ok_or_else(|| err("catalog_id", "is required for a product_list"))?;
        // None given reads as none at all, which `validate` refuses by their count.
        let mut out = Vec::new();
        for (s, section) in sections.unwrap_or_default().into_iter().enumerate() {
            if !section.rows.is_empty() {
                return Err(err(
                    format!("sections[{s}].rows"),
                    "belongs to a list; a product_list's sections have product_items",
                ));
            }
            out.push(ProductSection {
                title: section
                    .title
                    .ok_or_else(|| err(format!("sections[{s}].title"), "is required"))?,
                product_items: section.product_items.unwrap_or_default(),
            });
        }
        Ok(Self {
            catalog_id,
            sections: out,
        })
    }

    pub(super) fn to_fields(&self) -> Action {
        let sections = self
            .sections
            .iter()
            .map(|s| Section {
                title: Some(s.title.clone()),
                rows: Vec::new(),
                product_items: Some(s.product_items.clone()),
            })
            .collect();
        Action {
            catalog_id: Some(self.catalog_id.clone()),
            sections: Some(sections),
            ..Action::default()
        }
    }
}

impl CatalogAction {
    pub(super) fn from_fields(mut f: Action) -> Result<Self, RichError> {
        let (name, parameters) = (f.name.take(), f.parameters.take());
        f.refuse_rest()?;
        if name.as_deref() != Some(CATALOG_MESSAGE) {
            return Err(err("action.name", "must be \"catalog_message\""));
        }
        let thumbnail_product_retailer_id = match parameters {
            None => None,
            Some(Parameters::Catalog(p)) => p.thumbnail_product_retailer_id,
            Some(Parameters::Flow(_)) => {
                return Err(err(
                    "flow_cta",
                    "does not belong to this kind of interactive message",
                ));
            }
            Some(Parameters::Cta(_)) => {
                return Err(err(
                    "url",
                    "does not belong to this kind of interactive message",
                ));
            }
        };
        Ok(Self {
            thumbnail_product_retailer_id,
        })
    }

    pub(super) fn to_fields(&self) -> Action {
        Action {
            name: Some(CATALOG_MESSAGE.into()),
            // Written only with a thumbnail, as the platform's own examples do.
            parameters: self.thumbnail_product_retailer_id.as_ref().map(|t| {
                Parameters::Catalog(CatalogParameters {
                    thumbnail_product_retailer_id: Some(t.clone()),
                })
            }),
            ..Action::default()
        }
    }
}

impl FlowAction {
    pub(super) fn from_fields(mut f: Action) -> Result<Self, RichError> {
        let name = f.name.take();
        let parameters = match f.parameters.take() {
            Some(Parameters::Flow(p)) => Some(p),
            Some(Parameters::Cta(_)) => {
                return Err(err(
                    "url",
                    "does not belong to this kind of interactive message",
                ));
            }
            // No flow's keys at all: refused below as missing them.
            Some(Parameters::Catalog(_)) | None => None,
        };
        f.refuse_rest()?;
        if name.as_deref() != Some(FLOW) {
            return Err(err("action.name", "must be \"flow\""));
        }
        let parameters = parameters.ok_or_else(|| {
            err(
                "flow_cta",
                "and `flow_id` or `flow_name` are required for a flow",
            )
        })?;
        Ok(Self { parameters })
    }

    pub(super) fn to_fields(&self) -> Action {
        Action {
            name: Some(FLOW.into()),
            parameters: Some(Parameters::Flow(self.parameters.clone())),
            ..Action::default()
        }
    }
}

/// A kind whose action is only its `name`: takes the name, refuses any other key and a
/// name other than `name`.
fn name_only(mut f: Action, name: &str) -> Result<(), RichError> {
    let given = f.name.take();
    f.refuse_rest()?;
    if given.as_deref() != Some(name) {
        return Err(err("action.name", format!("must be \"{name}\"")));
    }
    Ok(())
}

fn named(name: &str) -> Action {
    Action {
        name: Some(name.into()),
        ..Action::default()
    }
}

impl LocationRequestAction {
    pub(super) fn from_fields(f: Action) -> Result<Self, RichError> {
        name_only(f, Self::NAME).map(|()| Self)
    }

    pub(super) fn to_fields(self) -> Action {
        named(Self::NAME)
    }
}

impl CallPermissionAction {
    pub(super) fn from_fields(f: Action) -> Result<Self, RichError> {
        name_only(f, Self::NAME).map(|()| Self)
    }

    pub(super) fn to_fields(self) -> Action {
        named(Self::NAME)
    }
}
