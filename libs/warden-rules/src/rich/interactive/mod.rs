//! The platform's `interactive` object: what every kind shares (header, body, footer) and
//! its [`Action`], one variant per kind.
//!
//! A kind is one file of this folder: a struct holding exactly the `action` fields it
//! sends, how it is taken from an action as written ([`ActionFields`]) and written back,
//! and its own `validate`. A new kind (a Flow, a product list, ...) is such a file, a
//! variant of [`Action`] and of [`InteractiveType`], and the match arms the compiler then
//! asks for (docs/architecture.md, "Where new things go").

use serde::{Deserialize, Serialize, Serializer};

use super::{
    MAX_BODY_CHARS, MAX_FOOTER_CHARS, MAX_HEADER_CHARS, MediaType, RichError, err, shown, text,
};
use crate::text::TextKind;

mod buttons;
mod call_permission;
mod catalog;
mod cta_url;
mod fields;
mod flow;
mod list;
mod location_request;

mod parameters;
mod product;
mod product_list;

pub use buttons::{ButtonsAction, Reply, ReplyButton};
pub use call_permission::CallPermissionAction;
pub use catalog::{CatalogAction, CatalogParameters};
pub use cta_url::{CtaParameters, CtaUrlAction};
pub use fields::{Action as ActionFields, Interactive as InteractiveFields};
pub use flow::{
    FLOW_ACTIONS, FLOW_MESSAGE_VERSION, FLOW_MODES, FlowAction, FlowActionPayload, FlowParameters,
    MAX_FLOW_CTA_CHARS, MAX_FLOW_TOKEN_CHARS, Submission, check_data, check_token, is_emoji,
    read_submission,
};
pub use list::{ListAction, Row, Section};
pub use location_request::LocationRequestAction;
pub use parameters::Parameters;
pub use product::{MAX_PRODUCT_ID_CHARS, ProductAction};
pub use product_list::{MAX_PRODUCT_ITEMS, ProductItem, ProductListAction, ProductSection};

/// The interactive kinds of `send_interactive`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum InteractiveType {
    /// Up to three reply buttons.
    #[serde(rename = "button")]
    Buttons,
    /// A list of rows behind a button.
    #[serde(rename = "list")]
    List,
    /// One call-to-action URL button.
    #[serde(rename = "cta_url")]
    CtaUrl,
    /// A button that opens a Flow.
    #[serde(rename = "flow")]
    Flow,
    /// The platform's "Send location" button.
    #[serde(rename = "location_request_message")]
    LocationRequest,
    /// Asks the customer's permission to call them.
    #[serde(rename = "call_permission_request")]
    CallPermissionRequest,
    /// One product of a catalog.
    #[serde(rename = "product")]
    Product,
    /// Up to 30 products of a catalog, in sections.
    #[serde(rename = "product_list")]
    ProductList,
    /// The whole catalog behind a button (send_interactive's kind `catalog`).
    #[serde(rename = "catalog_message")]
    Catalog,
}

impl InteractiveType {
    /// Tool spelling: `buttons|list|cta_url|product|product_list|catalog` (`button` and
    /// `catalog_message` also accepted).
    pub fn parse(s: &str) -> Result<Self, RichError> {
        match s.trim().to_ascii_lowercase().as_str() {
            "buttons" | "button" => Ok(Self::Buttons),
            "list" => Ok(Self::List),
            "cta_url" => Ok(Self::CtaUrl),
            "flow" => Ok(Self::Flow),
            "location_request" | "location_request_message" => Ok(Self::LocationRequest),
            "call_permission_request" => Ok(Self::CallPermissionRequest),
            "product" => Ok(Self::Product),
            "product_list" => Ok(Self::ProductList),
            "catalog" | "catalog_message" => Ok(Self::Catalog),
            _ => Err(err(
                "kind",
                format!(
                    "is {}; use buttons, list, cta_url, flow, location_request, call_permission_request, product, product_list or catalog",
                    shown(s)
                ),
            )),
        }
    }

    /// The platform's `type`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Buttons => "button",
            Self::List => "list",
            Self::CtaUrl => "cta_url",
            Self::Flow => "flow",
            Self::LocationRequest => "location_request_message",
            Self::CallPermissionRequest => "call_permission_request",
            Self::Product => "product",
            Self::ProductList => "product_list",
            Self::Catalog => "catalog_message",
        }
    }

    /// The kind as send_interactive names it.
    pub fn tool_name(self) -> &'static str {
        match self {
            Self::Buttons => "buttons",
            Self::LocationRequest => "location_request",
            other => other.as_str(),
        }
    }

    /// Kinds the platform shows with a body only: a header or a footer is refused.
    pub fn body_only(self) -> bool {
        matches!(self, Self::LocationRequest | Self::CallPermissionRequest)
    }

    /// Whether the platform takes an image, video or document header with this kind (a
    /// list's header is text only).
    pub fn takes_media_header(self) -> bool {
        !matches!(self, Self::List | Self::Flow | Self::ProductList)
    }

    /// What this kind says of a header: a product or catalog message shows the
    /// product's or catalog's own image instead, and a product list needs a text one.
    fn header_rule(self) -> HeaderRule {
        match self {
            Self::Product | Self::Catalog => HeaderRule::None,
            Self::ProductList => HeaderRule::Required,
            Self::Buttons
            | Self::List
            | Self::CtaUrl
            | Self::Flow
            | Self::LocationRequest
            | Self::CallPermissionRequest => HeaderRule::Optional,
        }
    }

    /// Whether the body may be left out (only a single product's, which shows the
    /// product's own name and price).
    fn body_optional(self) -> bool {
        matches!(self, Self::Product)
    }
}

/// Whether a kind takes a header.
enum HeaderRule {
    Optional,
    Required,
    None,
}

/// `{"text": ...}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TextObject {
    /// The text.
    pub text: String,
}

/// An interactive header: text, or a media object of its `type`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Header {
    /// `text`, `image`, `video` or `document`.
    #[serde(rename = "type")]
    pub kind: String,
    /// For `text`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// For `image`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<super::MediaObject>,
    /// For `video`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub video: Option<super::MediaObject>,
    /// For `document`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub document: Option<super::MediaObject>,
}

impl Header {
    fn validate(&self, kind: InteractiveType) -> Result<(), RichError> {
        let h = self;
        match (h.kind.as_str(), &h.text, &h.image, &h.video, &h.document) {
            ("text", Some(t), None, None, None) => {
                text("header", t, MAX_HEADER_CHARS, TextKind::Plain)?
            }
            ("image", None, Some(m), None, None) => m.validate(MediaType::Image)?,
            ("video", None, None, Some(m), None) => m.validate(MediaType::Video)?,
            ("document", None, None, None, Some(m)) => m.validate(MediaType::Document)?,
            _ => {
                return Err(err(
                    "header",
                    "must be {\"type\":\"text\",\"text\":...} or a media header whose type names its one media object",
                ));
            }
        }
        if !kind.takes_media_header() && h.kind != "text" {
            return Err(err(
                "header",
                format!("of a {} message must be text", kind.as_str()),
            ));
        }
        Ok(())
    }
}

/// The parts every kind has, checked before its action (in this order, which decides
/// which fault a body breaking several rules is refused for).
fn check_shared(
    kind: InteractiveType,
    header: Option<&Header>,
    body: Option<&TextObject>,
    footer: Option<&TextObject>,
) -> Result<(), RichError> {
    match body {
        Some(body) => text("body", &body.text, MAX_BODY_CHARS, TextKind::FreeText)?,
        None if kind.body_optional() => {}
        None => {
            return Err(err(
                "body",
                format!("is required for a {} message", kind.as_str()),
            ));
        }
    }
    if kind.body_only() {
        let only_body = |field: &str| {
            err(
                field,
                format!(
                    "is not part of a {} message: the platform shows only its body",
                    kind.tool_name()
                ),
            )
        };
        if header.is_some() {
            return Err(only_body("header"));
        }
        if footer.is_some() {
            return Err(only_body("footer"));
        }
    }
    if let Some(footer) = footer {
        text("footer", &footer.text, MAX_FOOTER_CHARS, TextKind::FreeText)?;
    }
    match (header, kind.header_rule()) {
        (Some(_), HeaderRule::None) => Err(err(
            "header",
            format!("is not allowed on a {} message", kind.as_str()),
        )),
        (None, HeaderRule::Required) => Err(err(
            "header",
            format!(
                "is required for a {} message (text, at most {MAX_HEADER_CHARS} characters)",
                kind.as_str()
            ),
        )),
        (Some(h), _) => h.validate(kind),
        (None, _) => Ok(()),
    }
}

/// The `action` of an interactive message: one variant per kind, each holding exactly
/// the fields that kind sends.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// `button`: up to three reply buttons.
    Buttons(ButtonsAction),
    /// `list`: rows behind a button.
    List(ListAction),
    /// `cta_url`: one URL button.
    CtaUrl(CtaUrlAction),
    /// `flow`: a button that opens a Flow.
    Flow(FlowAction),
    /// `location_request_message`: the "Send location" button.
    LocationRequest(LocationRequestAction),
    /// `call_permission_request`: asks to call the customer.
    CallPermissionRequest(CallPermissionAction),
    /// `product`: one product of a catalog.
    Product(ProductAction),
    /// `product_list`: products of a catalog in sections.
    ProductList(ProductListAction),
    /// `catalog_message`: the whole catalog.
    Catalog(CatalogAction),
}

impl Action {
    /// The interactive `type` this action makes.
    pub fn kind(&self) -> InteractiveType {
        match self {
            Self::Buttons(_) => InteractiveType::Buttons,
            Self::List(_) => InteractiveType::List,
            Self::CtaUrl(_) => InteractiveType::CtaUrl,
            Self::Flow(_) => InteractiveType::Flow,
            Self::LocationRequest(_) => InteractiveType::LocationRequest,
            Self::CallPermissionRequest(_) => InteractiveType::CallPermissionRequest,
            Self::Product(_) => InteractiveType::Product,
            Self::ProductList(_) => InteractiveType::ProductList,
            Self::Catalog(_) => InteractiveType::Catalog,
        }
    }

    fn validate(&self) -> Result<(), RichError> {
        match self {
            Self::Buttons(a) => a.validate(),
            Self::List(a) => a.validate(),
            Self::CtaUrl(a) => a.validate(),
            Self::Flow(a) => a.validate(),
            Self::LocationRequest(a) => a.validate(),
            Self::CallPermissionRequest(a) => a.validate(),
            Self::Product(a) => a.validate(),
            Self::ProductList(a) => a.validate(),
            Self::Catalog(a) => a.validate(),
        }
    }

    /// `kind`'s action from the fields as written; a field of another kind is refused.
    fn from_fields(kind: InteractiveType, fields: ActionFields) -> Result<Self, RichError> {
        Ok(match kind {
            InteractiveType::Buttons => Self::Buttons(ButtonsAction::from_fields(fields)?),
            InteractiveType::List => Self::List(ListAction::from_fields(fields)?),
            InteractiveType::CtaUrl => Self::CtaUrl(CtaUrlAction::from_fields(fields)?),
            InteractiveType::Flow => Self::Flow(FlowAction::from_fields(fields)?),
            InteractiveType::LocationRequest => {
                Self::LocationRequest(LocationRequestAction::from_fields(fields)?)
            }
            InteractiveType::CallPermissionRequest => {
                Self::CallPermissionRequest(CallPermissionAction::from_fields(fields)?)
            }
            InteractiveType::Product => Self::Product(ProductAction::from_fields(fields)?),
            InteractiveType::ProductList => {
                Self::ProductList(ProductListAction::from_fields(fields)?)
            }
            InteractiveType::Catalog => Self::Catalog(CatalogAction::from_fields(fields)?),
        })
    }

    /// The fields as the platform reads them (and as they are stored).
    fn to_fields(&self) -> ActionFields {
        match self {
            Self::Buttons(a) => a.to_fields(),
            Self::List(a) => a.to_fields(),
            Self::CtaUrl(a) => a.to_fields(),
            Self::Flow(a) => a.to_fields(),
            Self::LocationRequest(a) => a.to_fields(),
            Self::CallPermissionRequest(a) => a.to_fields(),
            Self::Product(a) => a.to_fields(),
            Self::ProductList(a) => a.to_fields(),
            Self::Catalog(a) => a.to_fields(),
        }
    }
}

/// The platform's `interactive` object. Read it with [`Interactive::try_from`] an
/// [`InteractiveFields`] (which [`super::RichMessage::from_json`] does); it serialises to
/// the platform's shape, its `type` given by its action.
#[derive(Debug, Clone, PartialEq)]
pub struct Interactive {
    /// Optional header.
    pub header: Option<Header>,
    /// The body text (required but by `product`).
    pub body: Option<TextObject>,
    /// Optional footer.
    pub footer: Option<TextObject>,
    /// Buttons, rows or the CTA.
    pub action: Action,
}

impl Interactive {
    /// `button`, `list` or `cta_url`.
    pub fn kind(&self) -> InteractiveType {
        self.action.kind()
    }

    pub(super) fn validate(&self) -> Result<(), RichError> {
        check_shared(
            self.kind(),
            self.header.as_ref(),
            self.body.as_ref(),
            self.footer.as_ref(),
        )?;
        self.action.validate()
    }
}

impl TryFrom<InteractiveFields> for Interactive {
    type Error = RichError;

    /// Refuses an action field of another kind, or a missing one the kind needs. The
    /// shared parts are checked first, as `validate` does, so a body breaking several
    /// rules is refused for the same one whichever step finds it.
    fn try_from(f: InteractiveFields) -> Result<Self, RichError> {
        check_shared(
            f.kind,
            f.header.as_ref(),
            f.body.as_ref(),
            f.footer.as_ref(),
        )?;
        Ok(Interactive {
            action: Action::from_fields(f.kind, f.action)?,
            header: f.header,
            body: f.body,
            footer: f.footer,
        })
    }
}

impl Serialize for Interactive {
    /// Through [`InteractiveFields`], so the JSON is exactly the platform's shape (and
    /// what rows stored before the typed action hold).
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        InteractiveFields {
            kind: self.kind(),
            header: self.header.clone(),
            body: self.body.clone(),
            footer: self.footer.clone(),
            action: self.action.to_fields(),
        }
        .serialize(s)
    }
}

#[cfg(test)]
mod commerce_tests;
#[cfg(test)]
mod tests;
