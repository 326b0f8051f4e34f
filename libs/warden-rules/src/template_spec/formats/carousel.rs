//! Carousel templates: the template's body, then 2 to 10 cards, each a media header, an
//! optional body and 1 or 2 buttons. Every card has the same header format and the same
//! button types in the same order; the category is MARKETING.

use serde_json::{Value, json};

use super::not_allowed;
use crate::kinds::TemplateCategory;
use crate::template_spec::{
    Button, ButtonKind, HeaderFormat, SpecError, TemplateSpec, err, parse_buttons, parse_header,
};

/// Fewest cards (platform).
pub const MIN_CARDS: usize = 2;
/// Most cards (platform).
pub const MAX_CARDS: usize = 10;
/// Most buttons on a card (platform).
pub const MAX_CARD_BUTTONS: usize = 2;
/// Longest card body (platform).
pub const MAX_CARD_BODY_CHARS: usize = 160;

/// One card as created.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Card {
    /// IMAGE or VIDEO.
    pub header: HeaderFormat,
    /// The example media the platform reviews: an upload handle or an https URL.
    pub example: String,
    /// The card's own text, if any.
    pub body: Option<String>,
    /// 1 or 2 QUICK_REPLY / URL buttons.
    pub buttons: Vec<Button>,
}

/// A carousel's cards, in order (a card's index is its position).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Carousel {
    /// 2 to 10 cards.
    pub cards: Vec<Card>,
}

impl Card {
    /// The card as a template of its own (no header parameter text, its body, its
    /// buttons), so a card's send values resolve with the template's own rules.
    pub fn spec(&self) -> TemplateSpec {
        TemplateSpec {
            header: Some(crate::template_spec::Header {
                format: self.header,
                text: None,
            }),
            body: self.body.clone().unwrap_or_default(),
            buttons: self.buttons.clone(),
            ..Default::default()
        }
    }

    fn components(&self) -> Vec<Value> {
        let mut spec = self.spec();
        spec.header = None;
        let mut out = vec![json!({
            "type": "HEADER",
            "format": self.header.as_upper(),
            "example": {"header_handle": [self.example]},
        })];
        out.extend(
            spec.to_components()
                .into_iter()
                .filter(|c| c["type"] != "BODY" || self.body.is_some()),
        );
        out
    }
}

/// Reads create_template's `cards`: a JSON array of `{header: {format, example}, body?,
/// buttons}`.
pub fn parse_cards(value: &Value) -> Result<Carousel, SpecError> {
    let items = value.as_array().ok_or_else(|| {
        err(
            "cards",
            "must be a JSON array of {header, body?, buttons} objects",
        )
    })?;
    let cards = items
        .iter()
        .enumerate()
        .map(|(i, c)| parse_card(i, c))
        .collect::<Result<_, _>>()?;
    Ok(Carousel { cards })
}

fn parse_card(i: usize, c: &Value) -> Result<Card, SpecError> {
    let field = format!("cards[{i}]");
    let o = c
        .as_object()
        .ok_or_else(|| err(&field, "must be an object {header, body?, buttons}"))?;
    if let Some(key) = o
        .keys()
        .find(|k| !matches!(k.as_str(), "header" | "body" | "buttons"))
    {
        return Err(err(
            &field,
            format!("has an unknown key {key:?}; use header, body and buttons"),
        ));
    }
    let raw = o.get("header").ok_or_else(|| {
        err(
            format!("{field}.header"),
            "is required: {\"format\": \"IMAGE\", \"example\": \"<media handle or https URL>\"}",
        )
    })?;
    let header = parse_header(raw).map_err(|e| within(&field, e))?;
    let example = match raw.get("example") {
        Some(Value::String(s)) => s.trim().to_owned(),
        Some(Value::Object(e)) => handle_of(e),
        _ => String::new(),
    };
    let body = match o.get("body") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => return Err(err(format!("{field}.body"), "must be a string")),
    };
    let buttons =
        parse_buttons(o.get("buttons").unwrap_or(&json!([]))).map_err(|e| within(&field, e))?;
    Ok(Card {
        header: header.format,
        example,
        body,
        buttons,
    })
}

/// `{"header_handle": ["4::aW..."]}` → its first handle.
fn handle_of(example: &serde_json::Map<String, Value>) -> String {
    example
        .get("header_handle")
        .and_then(Value::as_array)
        .and_then(|a| a.first())
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned()
}

/// An error of a card's part, named from the carousel (`cards[1].buttons[0].type`);
/// a card's body is `body`, not the template's `body_text`.
fn within(card: &str, e: SpecError) -> SpecError {
    let field = match e.field.as_str() {
        "body_text" => "body".to_owned(),
        f => f.to_owned(),
    };
    SpecError {
        field: format!("{card}.{field}"),
        problem: e.problem,
    }
}

impl Carousel {
    /// The platform's rules for a carousel template (`spec` is the template around it).
    pub fn validate(
        &self,
        spec: &TemplateSpec,
        category: TemplateCategory,
    ) -> Result<(), SpecError> {
        if category != TemplateCategory::Marketing {
            return Err(err(
                "category",
                format!(
                    "is {}, but a carousel template must be MARKETING",
                    category.as_upper()
                ),
            ));
        }
        for (field, present) in [
            ("header", spec.header.is_some()),
            ("footer", spec.footer.is_some()),
            ("buttons", !spec.buttons.is_empty()),
        ] {
            if present {
                return Err(not_allowed(
                    field,
                    "a carousel template (its cards carry the headers and buttons)",
                ));
            }
        }
        let n = self.cards.len();
        if !(MIN_CARDS..=MAX_CARDS).contains(&n) {
            return Err(err(
                "cards",
                format!("has {n} cards; a carousel has {MIN_CARDS} to {MAX_CARDS}"),
            ));
        }
        let first = &self.cards[0];
        for (i, card) in self.cards.iter().enumerate() {
            card.validate(i, first)?;
        }
        Ok(())
    }

    pub(super) fn shape_components(&self, mut common: Vec<Value>) -> Vec<Value> {
        let cards: Vec<Value> = self
            .cards
            .iter()
            .map(|c| json!({"components": c.components()}))
            .collect();
        common.push(json!({"type": "CAROUSEL", "cards": cards}));
        common
    }

    /// Reads a `CAROUSEL` component back.
    pub fn read(c: &Value) -> Result<Self, SpecError> {
        let cards = c
            .get("cards")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        let cards = cards
            .iter()
            .enumerate()
            .map(|(i, card)| {
                let field = format!("cards[{i}]");
                let list = card.get("components").cloned().unwrap_or(json!([]));
                let spec = TemplateSpec::from_components(&list, None, "")
                    .map_err(|e| within(&field, e))?;
                let header =
                    super::find(list.as_array().map(Vec::as_slice).unwrap_or(&[]), "HEADER");
                let example = header
                    .and_then(|h| h.get("example"))
                    .and_then(Value::as_object)
                    .map(handle_of)
                    .unwrap_or_default();
                Ok(Card {
                    header: spec.header.map_or(HeaderFormat::Image, |h| h.format),
                    example,
                    body: (!spec.body.is_empty()).then_some(spec.body),
                    buttons: spec.buttons,
                })
            })
            .collect::<Result<_, SpecError>>()?;
        Ok(Carousel { cards })
    }
}

impl Card {
    fn validate(&self, i: usize, first: &Card) -> Result<(), SpecError> {
        let field = format!("cards[{i}]");
        if !matches!(self.header, HeaderFormat::Image | HeaderFormat::Video) {
            return Err(err(
                format!("{field}.header.format"),
                format!(
                    "is {}; a card's header is IMAGE or VIDEO",
                    self.header.as_upper()
                ),
            ));
        }
        if self.header != first.header {
            return Err(err(
                format!("{field}.header.format"),
                format!(
                    "is {}, but every card must have the same header format as cards[0] ({})",
                    self.header.as_upper(),
                    first.header.as_upper()
                ),
            ));
        }
        if self.example.is_empty() {
            return Err(err(
                format!("{field}.header.example"),
                "is required: an uploaded media handle or an https URL of an example the platform reviews",
            ));
        }
        if let Some(body) = &self.body {
            let n = body.chars().count();
            if n > MAX_CARD_BODY_CHARS {
                return Err(err(
                    format!("{field}.body"),
                    format!("has {n} characters; at most {MAX_CARD_BODY_CHARS} are allowed"),
                ));
            }
        }
        let n = self.buttons.len();
        if !(1..=MAX_CARD_BUTTONS).contains(&n) {
            return Err(err(
                format!("{field}.buttons"),
                format!("has {n} buttons; a card has 1 to {MAX_CARD_BUTTONS}"),
            ));
        }
        for (j, b) in self.buttons.iter().enumerate() {
            if !matches!(b.kind, ButtonKind::QuickReply | ButtonKind::Url) {
                return Err(err(
                    format!("{field}.buttons[{j}].type"),
                    format!(
                        "is {}; a card's buttons are QUICK_REPLY or URL",
                        b.kind.as_upper()
                    ),
                ));
            }
        }
        let kinds = |c: &Card| c.buttons.iter().map(|b| b.kind).collect::<Vec<_>>();
        if kinds(self) != kinds(first) {
            let j = (0..n)
                .find(|j| first.buttons.get(*j).map(|b| b.kind) != Some(self.buttons[*j].kind))
                .unwrap_or(n.min(first.buttons.len()));
            let want: Vec<&str> = first.buttons.iter().map(|b| b.kind.as_upper()).collect();
            return Err(err(
                if j < n {
                    format!("{field}.buttons[{j}].type")
                } else {
                    format!("{field}.buttons")
                },
                format!(
                    "differs from cards[0]: every card has the same button types in the same order ({})",
                    want.join(", ")
                ),
            ));
        }
        // The card's body and buttons by the template's own rules (a body of its own is
        // checked above; an empty one stands in so the buttons are checked alone).
        let mut spec = self.spec();
        spec.header = None;
        if spec.body.trim().is_empty() {
            spec.body = "card".into();
        }
        spec.validate(TemplateCategory::Marketing)
            .map_err(|e| within(&field, e))
    }
}
