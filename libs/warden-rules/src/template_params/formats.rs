//! What a send gives a carousel, a limited-time offer or an authentication template, in
//! the platform's shape: each card's header media and parameters (a `carousel`
//! component), the offer's expiry (`limited_time_offer`, `expiration_time_ms`) and the
//! code (Warden's `code` component, which becomes the body value and the OTP button's
//! parameter). Each is refused when the template lacks that part and required when it
//! has it; every message names the send_template parameter (`cards`, `offer_expires_at`,
//! `code`).

use serde_json::{Value, json};

use super::{ParamError, perr, resolve};
use crate::template_spec::TemplateSpec;
use crate::template_spec::formats::authentication::MAX_CODE_CHARS;
use crate::template_spec::formats::{Carousel, LimitedTimeOffer};
use crate::text::{TextKind, check};

/// Warden's component carrying an authentication code (never sent as it is: [`resolve`]
/// turns it into the body value and the OTP button's parameter).
pub fn code_component(code: &str) -> Value {
    json!({"type": "code", "code": code})
}

/// The platform's `carousel` component for `cards`: one entry per card, in card order,
/// either `{header: {link | id}, variables?: [...], buttons?: [{payload} | {text} | null]}`
/// or the platform's `{card_index, components: [...]}`.
pub fn carousel_component(cards: &Value) -> Value {
    json!({"type": "carousel", "cards": cards})
}

/// The platform's `limited_time_offer` component: the offer ends at `expiration_time_ms`
/// (Unix milliseconds).
pub fn offer_component(expiration_time_ms: i64) -> Value {
    json!({
        "type": "limited_time_offer",
        "parameters": [{"type": "limited_time_offer", "limited_time_offer": {"expiration_time_ms": expiration_time_ms}}],
    })
}

/// The format values a send gave, taken out of its components.
#[derive(Default)]
pub(super) struct FormatValues<'a> {
    carousel: Option<&'a Value>,
    offer: Option<&'a Value>,
}

/// Takes the format components out of `components`; a `code` becomes the body value and
/// the OTP button's parameter. Answers the rest, ready for the common checks.
pub(super) fn split<'a>(
    spec: &TemplateSpec,
    variables: &[String],
    components: &'a [Value],
) -> Result<(Vec<Value>, FormatValues<'a>), ParamError> {
    let mut rest = Vec::with_capacity(components.len() + 1);
    let mut values = FormatValues::default();
    let mut code = None;
    for c in components {
        let kind = c
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_ascii_lowercase();
        let slot = match kind.as_str() {
            "carousel" => &mut values.carousel,
            "limited_time_offer" => &mut values.offer,
            "code" => &mut code,
            _ => {
                rest.push(c.clone());
                continue;
            }
        };
        if slot.is_some() {
            return Err(perr(format!("components give the {kind} twice")));
        }
        *slot = Some(c);
    }
    if values.carousel.is_some() && spec.format.carousel().is_none() {
        return Err(perr(
            "`cards` is only for a carousel template, and this template has no cards",
        ));
    }
    match (spec.format.offer(), values.offer) {
        (None, Some(_)) => {
            return Err(perr(
                "`offer_expires_at` is only for a limited-time offer template, and this template is not one",
            ));
        }
        (Some(o), Some(_)) if !o.has_expiration => {
            return Err(perr(
                "`offer_expires_at` is not taken: the template's offer was created without has_expiration",
            ));
        }
        _ => {}
    }
    let auth = spec.format.authentication().is_some();
    match code {
        Some(_) if !auth => {
            return Err(perr(
                "`code` is only for an AUTHENTICATION template, and this template is not one",
            ));
        }
        Some(c) => {
            let code = c.get("code").and_then(Value::as_str).unwrap_or("");
            check_code(code)?;
            let body_given = rest.iter().any(|c| is(c, "body"));
            let button_given = rest.iter().any(|c| is(c, "button"));
            if !variables.is_empty() || body_given || button_given {
                return Err(perr(
                    "give the authentication code once, in `code` (it fills the body and the code button); leave variables and body/button components out",
                ));
            }
            rest.push(json!({"type": "body", "parameters": [{"type": "text", "text": code}]}));
            rest.push(json!({"type": "button", "sub_type": "url", "index": "0", "parameters": [{"type": "text", "text": code}]}));
        }
        None if auth && variables.is_empty() && !rest.iter().any(|c| is(c, "body")) => {
            return Err(perr(format!(
                "`code` is required: the template is an AUTHENTICATION template, and the code (1 to {MAX_CODE_CHARS} characters) fills its body and its code button"
            )));
        }
        None => {}
    }
    Ok((rest, values))
}

/// The authentication code's rule: 1 to 15 characters a template parameter may hold.
pub fn check_code(code: &str) -> Result<(), ParamError> {
    let n = code.chars().count();
    if code.trim().is_empty() || n > MAX_CODE_CHARS {
        return Err(perr(format!(
            "`code` has {n} characters; an authentication code has 1 to {MAX_CODE_CHARS}"
        )));
    }
    check(code, TextKind::TemplateParameter).map_err(|e| perr(format!("`code` {e}")))
}

fn is(c: &Value, kind: &str) -> bool {
    c.get("type")
        .and_then(Value::as_str)
        .is_some_and(|t| t.eq_ignore_ascii_case(kind))
}

/// Checks the carousel's cards and the offer's expiry against the template and adds
/// their components to `out` (the offer before the buttons, the carousel last).
pub(super) fn finish(
    spec: &TemplateSpec,
    values: &FormatValues<'_>,
    out: &mut Vec<Value>,
) -> Result<(), ParamError> {
    if let Some(offer) = resolve_offer(spec.format.offer(), values.offer)? {
        let at = out
            .iter()
            .position(|c| is(c, "button"))
            .unwrap_or(out.len());
        out.insert(at, offer);
    }
    match (spec.format.carousel(), values.carousel) {
        (Some(c), None) => Err(perr(format!(
            "`cards` is required: the template is a carousel of {} cards; give each card's header media (and its body and button values if it has any)",
            c.cards.len()
        ))),
        (Some(c), Some(given)) => {
            out.push(json!({"type": "carousel", "cards": resolve_cards(c, given)?}));
            Ok(())
        }
        _ => Ok(()),
    }
}

fn resolve_offer(
    offer: Option<&LimitedTimeOffer>,
    given: Option<&Value>,
) -> Result<Option<Value>, ParamError> {
    // A part the template lacks was refused in `split`.
    match (offer, given) {
        (Some(o), None) if o.has_expiration => Err(perr(
            "`offer_expires_at` is required: the template's offer shows a countdown to it (RFC 3339, in the future)",
        )),
        (Some(_), Some(c)) => {
            let ms = c
                .pointer("/parameters/0/limited_time_offer/expiration_time_ms")
                .and_then(Value::as_i64)
                .filter(|ms| *ms > 0)
                .ok_or_else(|| {
                    perr("`offer_expires_at` must be a time (limited_time_offer.expiration_time_ms, Unix milliseconds)")
                })?;
            Ok(Some(offer_component(ms)))
        }
        _ => Ok(None),
    }
}

/// Each card's values checked against the card as created, in card order.
fn resolve_cards(carousel: &Carousel, given: &Value) -> Result<Vec<Value>, ParamError> {
    let cards = given
        .get("cards")
        .and_then(Value::as_array)
        .ok_or_else(|| perr("`cards` must be a JSON array with one entry per card"))?;
    if cards.len() != carousel.cards.len() {
        return Err(perr(format!(
            "`cards` has {} entries, but the template has {} cards: give one per card, in order",
            cards.len(),
            carousel.cards.len()
        )));
    }
    let mut out = Vec::with_capacity(cards.len());
    for (position, entry) in cards.iter().enumerate() {
        let index = match entry.get("card_index") {
            None | Some(Value::Null) => position,
            Some(v) => v
                .as_u64()
                .map(|n| n as usize)
                .or_else(|| v.as_str().and_then(|s| s.trim().parse().ok()))
                .filter(|i| *i == position)
                .ok_or_else(|| {
                    perr(format!(
                        "cards[{position}].card_index must be {position} (cards go in card order)"
                    ))
                })?,
        };
        let card = &carousel.cards[index];
        let components = card_components(index, card.header.parameter_type(), card, entry)?;
        let resolved = resolve(&card.spec(), &[], &components)
            .map_err(|e| perr(format!("cards[{index}]: {e}")))?;
        out.push(json!({"card_index": index, "components": resolved}));
    }
    Ok(out)
}

/// One card's entry as platform components: as given (`components`), or from `header`,
/// `variables` and `buttons`.
fn card_components(
    index: usize,
    media: &str,
    card: &crate::template_spec::formats::Card,
    entry: &Value,
) -> Result<Vec<Value>, ParamError> {
    let field = format!("cards[{index}]");
    let o = entry.as_object().ok_or_else(|| {
        perr(format!(
            "{field} must be an object {{header, variables?, buttons?}}"
        ))
    })?;
    if let Some(c) = o.get("components") {
        return c
            .as_array()
            .cloned()
            .ok_or_else(|| perr(format!("{field}.components must be an array")));
    }
    if let Some(key) = o.keys().find(|k| {
        !matches!(
            k.as_str(),
            "card_index" | "header" | "variables" | "buttons"
        )
    }) {
        return Err(perr(format!(
            "{field} has an unknown key {key:?}; use header, variables and buttons"
        )));
    }
    let mut out = Vec::new();
    match o.get("header") {
        Some(Value::Object(h)) => {
            // `{"link": ...}` or `{"id": ...}`, or already `{"type": "image", "image": {...}}`.
            let param = if h.contains_key("type") {
                Value::Object(h.clone())
            } else {
                let mut p = json!({"type": media});
                p[media] = Value::Object(h.clone());
                p
            };
            out.push(json!({"type": "header", "parameters": [param]}));
        }
        Some(_) => {
            return Err(perr(format!(
                "{field}.header must be an object {{\"link\": \"https://...\"}} or {{\"id\": \"<media id>\"}}"
            )));
        }
        None => {}
    }
    match o.get("variables") {
        None | Some(Value::Null) => {}
        Some(v) => {
            let values = crate::templates::parse_variables(v)
                .map_err(|e| perr(format!("{field}.variables: {e}")))?;
            if !values.is_empty() {
                let ps: Vec<Value> = values
                    .iter()
                    .map(|v| json!({"type": "text", "text": v}))
                    .collect();
                out.push(json!({"type": "body", "parameters": ps}));
            }
        }
    }
    match o.get("buttons") {
        None | Some(Value::Null) => {}
        Some(Value::Array(buttons)) => {
            for (j, b) in buttons.iter().enumerate() {
                if b.is_null() {
                    continue;
                }
                let kind = card.buttons.get(j).map(|b| b.kind).ok_or_else(|| {
                    perr(format!(
                        "{field}.buttons[{j}]: the card has {} button(s)",
                        card.buttons.len()
                    ))
                })?;
                let param = match (b.get("payload"), b.get("text")) {
                    (Some(p), None) => json!({"type": "payload", "payload": p}),
                    (None, Some(t)) => json!({"type": "text", "text": t}),
                    _ => {
                        return Err(perr(format!(
                            "{field}.buttons[{j}] must be {{\"payload\": \"...\"}} (QUICK_REPLY) or {{\"text\": \"...\"}} (a URL's suffix)"
                        )));
                    }
                };
                out.push(json!({"type": "button", "sub_type": kind.sub_type(), "index": j.to_string(), "parameters": [param]}));
            }
        }
        Some(_) => {
            return Err(perr(format!("{field}.buttons must be an array")));
        }
    }
    Ok(out)
}

#[cfg(test)]
#[path = "formats_tests.rs"]
mod tests;
