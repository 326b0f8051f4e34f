//! The platform's carousel, limited-time offer and authentication templates, as the sim
//! reads them: the create-time rules (an error naming the field) and what a send must carry
//! (the cards, the offer's `expiration_time_ms`, the code), refused with 131009 / 132000
//! naming the field. Written from the platform's rules, independently of Warden's.

use serde_json::Value;
use warden_platform::message::{Component, TemplateMessage};
use warden_platform::template::TemplateComponent;

use super::{COUNT, Template, VALUE};

/// The body the platform writes for an authentication template.
pub const AUTH_BODY: &str = "{{1}} is your verification code.";

fn kind_of<'a>(components: &'a [TemplateComponent], kind: &str) -> Option<&'a TemplateComponent> {
    components
        .iter()
        .find(|c| c.kind.eq_ignore_ascii_case(kind))
}

fn buttons_of(c: Option<&TemplateComponent>) -> Vec<Value> {
    c.and_then(|c| c.buttons.as_ref())
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

fn button_type(b: &Value) -> String {
    b["type"].as_str().unwrap_or("").to_ascii_uppercase()
}

/// The OTP button of an authentication template, if it has one.
pub fn otp_button(components: &[TemplateComponent]) -> Option<Value> {
    buttons_of(kind_of(components, "BUTTONS"))
        .into_iter()
        .find(|b| button_type(b) == "OTP")
}

/// Create-time rules of the three formats (`category` upper-case, `components` all of the
/// request's).
pub fn check_create(category: &str, components: &[TemplateComponent]) -> Result<(), String> {
    if let Some(c) = kind_of(components, "CAROUSEL") {
        if category != "MARKETING" {
            return Err("category: a carousel template must be MARKETING".into());
        }
        check_cards(c.extra.get("cards"))?;
    }
    if let Some(c) = kind_of(components, "LIMITED_TIME_OFFER") {
        if category != "MARKETING" {
            return Err("category: a limited-time offer template must be MARKETING".into());
        }
        let offer = c
            .extra
            .get("limited_time_offer")
            .cloned()
            .unwrap_or(Value::Null);
        let text = offer["text"].as_str().unwrap_or("");
        if text.is_empty() || text.chars().count() > 16 {
            return Err("limited_time_offer.text: 1 to 16 characters".into());
        }
        if kind_of(components, "FOOTER").is_some() {
            return Err("components: a limited-time offer template has no FOOTER".into());
        }
        let buttons = buttons_of(kind_of(components, "BUTTONS"));
        if !buttons.iter().any(|b| button_type(b) == "URL") {
            return Err("buttons: a limited-time offer template needs a URL button".into());
        }
        if offer["has_expiration"].as_bool() == Some(true)
            && buttons.first().map(button_type).as_deref() != Some("COPY_CODE")
        {
            return Err(
                "buttons[0]: has_expiration needs a COPY_CODE button as the first button".into(),
            );
        }
    }
    if let Some(b) = otp_button(components) {
        if category != "AUTHENTICATION" {
            return Err("buttons: an OTP button is only for AUTHENTICATION templates".into());
        }
        let otp = b["otp_type"].as_str().unwrap_or("").to_ascii_uppercase();
        if !["COPY_CODE", "ONE_TAP", "ZERO_TAP"].contains(&otp.as_str()) {
            return Err("buttons[0].otp_type: COPY_CODE, ONE_TAP or ZERO_TAP".into());
        }
        if otp != "COPY_CODE" {
            let app = b["supported_apps"][0].clone();
            let app = if app.is_null() { b.clone() } else { app };
            let package = app["package_name"].as_str().unwrap_or("");
            if !package.contains('.') || package.starts_with('.') || package.ends_with('.') {
                return Err("buttons[0].supported_apps[0].package_name: an Android package name is required for ONE_TAP and ZERO_TAP".into());
            }
            if app["signature_hash"]
                .as_str()
                .is_none_or(|h| h.chars().count() != 11)
            {
                return Err("buttons[0].supported_apps[0].signature_hash: an 11-character hash is required for ONE_TAP and ZERO_TAP".into());
            }
        }
        if let Some(f) = kind_of(components, "FOOTER")
            && let Some(m) = f.extra.get("code_expiration_minutes")
            && m.as_u64().is_none_or(|m| !(1..=90).contains(&m))
        {
            return Err("FOOTER.code_expiration_minutes: 1 to 90".into());
        }
    }
    Ok(())
}

fn check_cards(cards: Option<&Value>) -> Result<(), String> {
    let cards = cards
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    if !(2..=10).contains(&cards.len()) {
        return Err(format!(
            "cards: a carousel has 2 to 10 cards, got {}",
            cards.len()
        ));
    }
    let mut first: Option<(String, Vec<String>)> = None;
    for (i, card) in cards.iter().enumerate() {
        let list: Vec<TemplateComponent> =
            serde_json::from_value(card["components"].clone()).unwrap_or_default();
        let header = kind_of(&list, "HEADER")
            .ok_or_else(|| format!("cards[{i}].components: a card needs a HEADER"))?;
        let format = header.format.as_deref().unwrap_or("").to_ascii_uppercase();
        if !["IMAGE", "VIDEO"].contains(&format.as_str()) {
            return Err(format!("cards[{i}].header.format: IMAGE or VIDEO"));
        }
        let handle = header
            .example
            .as_ref()
            .and_then(|e| e["header_handle"][0].as_str())
            .unwrap_or("");
        if handle.is_empty() {
            return Err(format!("cards[{i}].header.example.header_handle: required"));
        }
        if let Some(b) = kind_of(&list, "BODY")
            && b.text.as_deref().is_some_and(|t| t.chars().count() > 160)
        {
            return Err(format!("cards[{i}].body.text: at most 160 characters"));
        }
        let types: Vec<String> = buttons_of(kind_of(&list, "BUTTONS"))
            .iter()
            .map(button_type)
            .collect();
        if types.is_empty()
            || types.len() > 2
            || types.iter().any(|t| t != "QUICK_REPLY" && t != "URL")
        {
            return Err(format!(
                "cards[{i}].buttons: 1 or 2 QUICK_REPLY or URL buttons"
            ));
        }
        match &first {
            None => first = Some((format, types)),
            Some((f, t)) if *f != format || *t != types => {
                return Err(format!(
                    "cards[{i}]: every card must have the same header format and button types as cards[0]"
                ));
            }
            Some(_) => {}
        }
    }
    Ok(())
}

fn component<'a>(tm: &'a TemplateMessage, kind: &str) -> Option<&'a Component> {
    tm.components
        .iter()
        .find(|c| c.kind.eq_ignore_ascii_case(kind))
}

/// What a send of `t` must carry for its format.
pub fn check_send(t: &Template, tm: &TemplateMessage, now_ms: i64) -> Result<(), (i64, String)> {
    let carousel = kind_of(&t.components, "CAROUSEL");
    match (carousel, component(tm, "carousel")) {
        (None, Some(_)) => {
            return Err((COUNT, "carousel: the template has no carousel".into()));
        }
        (Some(_), None) => {
            return Err((
                COUNT,
                "carousel: the template's cards need a carousel component".into(),
            ));
        }
        (Some(c), Some(given)) => check_send_cards(c, given)?,
        (None, None) => {}
    }
    let offer = kind_of(&t.components, "LIMITED_TIME_OFFER")
        .and_then(|c| c.extra.get("limited_time_offer"))
        .map(|o| o["has_expiration"].as_bool() == Some(true));
    match (offer, component(tm, "limited_time_offer")) {
        (None | Some(false), Some(_)) => {
            return Err((
                COUNT,
                "limited_time_offer: the template's offer has no expiration".into(),
            ));
        }
        (Some(true), None) => {
            return Err((
                COUNT,
                "limited_time_offer: expiration_time_ms is required".into(),
            ));
        }
        (Some(true), Some(c)) => {
            let ms = c
                .parameters
                .first()
                .and_then(|p| p.other.get("limited_time_offer"))
                .and_then(|o| o["expiration_time_ms"].as_i64());
            if ms.is_none_or(|ms| ms <= now_ms) {
                return Err((
                    VALUE,
                    "limited_time_offer.expiration_time_ms: must be a time in the future (Unix milliseconds)".into(),
                ));
            }
        }
        _ => {}
    }
    if otp_button(&t.components).is_some() {
        let code = tm
            .components
            .iter()
            .find(|c| c.kind.eq_ignore_ascii_case("button") && c.index.as_deref() == Some("0"))
            .and_then(|c| c.parameters.first())
            .and_then(|p| p.text.as_deref())
            .unwrap_or("");
        if code.is_empty() || code.chars().count() > 15 {
            return Err((
                VALUE,
                "buttons[0].parameters[0].text: the authentication code must be 1 to 15 characters"
                    .into(),
            ));
        }
    }
    Ok(())
}

fn check_send_cards(c: &TemplateComponent, given: &Component) -> Result<(), (i64, String)> {
    let cards = c
        .extra
        .get("cards")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let sent = given
        .other
        .get("cards")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if sent.len() != cards.len() {
        return Err((
            COUNT,
            format!(
                "carousel.cards: the template has {} cards, the send {}",
                cards.len(),
                sent.len()
            ),
        ));
    }
    for (i, (card, s)) in cards.iter().zip(&sent).enumerate() {
        if s["card_index"].as_u64() != Some(i as u64) {
            return Err((
                VALUE,
                format!("carousel.cards[{i}].card_index: must be {i}"),
            ));
        }
        let list: Vec<TemplateComponent> =
            serde_json::from_value(card["components"].clone()).unwrap_or_default();
        let format = kind_of(&list, "HEADER")
            .and_then(|h| h.format.clone())
            .unwrap_or_default()
            .to_ascii_lowercase();
        let parts: Vec<Component> =
            serde_json::from_value(s["components"].clone()).unwrap_or_default();
        let header = parts.iter().find(|p| p.kind.eq_ignore_ascii_case("header"));
        let media = header
            .and_then(|h| h.parameters.first())
            .filter(|p| p.kind.eq_ignore_ascii_case(&format))
            .and_then(|p| p.other.get(&format));
        let has = |k: &str| {
            media
                .and_then(|m| m[k].as_str())
                .is_some_and(|v| !v.is_empty())
        };
        if !has("link") && !has("id") {
            return Err((
                VALUE,
                format!("carousel.cards[{i}].header: a {format} with a link or an id is required"),
            ));
        }
        for (j, b) in buttons_of(kind_of(&list, "BUTTONS")).iter().enumerate() {
            let wants =
                button_type(b) == "URL" && b["url"].as_str().is_some_and(|u| u.contains("{{"));
            let sent = parts.iter().find(|p| {
                p.kind.eq_ignore_ascii_case("button")
                    && p.index.as_deref() == Some(j.to_string().as_str())
            });
            if wants
                && sent
                    .and_then(|p| p.parameters.first())
                    .and_then(|p| p.text.as_deref())
                    .is_none()
            {
                return Err((
                    COUNT,
                    format!(
                        "carousel.cards[{i}].buttons[{j}]: the URL's variable needs a text parameter"
                    ),
                ));
            }
        }
    }
    Ok(())
}
