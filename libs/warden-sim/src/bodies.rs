//! Send bodies other than text and template, checked as the platform checks them:
//! an unknown `type` is 131051, a missing object 131008, a value out of the platform's
//! limits 131009, a media id the sim does not hold 131052. Written independently of
//! Warden's own validators so that the sim catches what they miss.

use serde_json::{Map, Value};

use crate::state::{Refusal, Sim};

const MEDIA: [&str; 5] = ["image", "video", "audio", "document", "sticker"];

fn bad(details: impl Into<String>) -> Refusal {
    Refusal::new(400, 131009, details)
}

fn chars(v: Option<&Value>) -> Option<usize> {
    v.and_then(Value::as_str).map(|s| s.chars().count())
}

/// A required string of 1..=max characters at `key` of `obj`.
fn text(obj: &Value, key: &str, max: usize, what: &str) -> Result<(), Refusal> {
    match chars(obj.get(key)) {
        Some(n) if n > 0 && n <= max => Ok(()),
        Some(n) => Err(bad(format!(
            "{what} has {n} characters; allowed 1 to {max}"
        ))),
        None => Err(Refusal::new(400, 131008, format!("{what} is required"))),
    }
}

fn optional(obj: &Value, key: &str, max: usize, what: &str) -> Result<(), Refusal> {
    if obj.get(key).is_some() {
        text(obj, key, max, what)?;
    }
    Ok(())
}

fn media(sim: &Sim, kind: &str, m: &Value) -> Result<(), Refusal> {
    match (m.get("id"), m.get("link")) {
        (Some(_), Some(_)) => return Err(bad(format!("{kind}: pass id or link, not both"))),
        (None, None) => {
            return Err(Refusal::new(
                400,
                131008,
                format!("{kind}: id or link is required"),
            ));
        }
        (Some(id), None) => {
            let id = id
                .as_str()
                .map(str::to_owned)
                .unwrap_or_else(|| id.to_string());
            if !sim.media.contains(&id) {
                return Err(Refusal::new(
                    400,
                    131052,
                    format!("media id {id} is not known"),
                ));
            }
        }
        (None, Some(link)) => {
            let ok = link
                .as_str()
                .is_some_and(|l| l.starts_with("https://") || l.starts_with("http://"));
            if !ok {
                return Err(bad(format!("{kind}.link must be an http(s) URL")));
            }
        }
    }
    if m.get("caption").is_some() {
        if matches!(kind, "audio" | "sticker") {
            return Err(bad(format!("{kind} does not take a caption")));
        }
        text(m, "caption", 1024, "caption")?;
    }
    Ok(())
}

fn interactive(sim: &Sim, i: &Value) -> Result<(), Refusal> {
    let kind = i.get("type").and_then(Value::as_str);
    match i.get("body") {
        // A single product shows the product's own name and price.
        None if kind == Some("product") => {}
        None => return Err(Refusal::new(400, 131008, "interactive.body is required")),
        Some(body) => text(body, "text", 1024, "body.text")?,
    }
    crate::commerce::header_rule(kind, i)?;
    if let Some(f) = i.get("footer") {
        text(f, "text", 60, "footer.text")?;
    }
    if let Some(h) = i.get("header") {
        match h.get("type").and_then(Value::as_str) {
            Some("text") => text(h, "text", 60, "header.text")?,
            Some(k @ ("image" | "video" | "document")) => {
                media(sim, k, h.get(k).unwrap_or(&Value::Null))?
            }
            _ => return Err(bad("header.type must be text, image, video or document")),
        }
    }
    let action = i
        .get("action")
        .ok_or_else(|| Refusal::new(400, 131008, "interactive.action is required"))?;
    // One arm per interactive type, each checking its own action.
    match i.get("type").and_then(Value::as_str) {
        Some("button") => button_action(action),
        Some("list") => list_action(action),
        Some("cta_url") => cta_url_action(action),
        Some("flow") => crate::flows::flow_action(sim, action),
        Some("location_request_message") => crate::calls::location_request_action(i, action),
        Some("call_permission_request") => crate::calls::call_permission_action(i, action),
        Some("product") => crate::commerce::product_action(action),
        Some("product_list") => crate::commerce::product_list_action(action),
        Some("catalog_message") => crate::commerce::catalog_action(action),
        Some(other) => Err(bad(format!("interactive type {other:?} is not supported"))),
        None => Err(Refusal::new(400, 131008, "interactive.type is required")),
    }
}

fn button_action(action: &Value) -> Result<(), Refusal> {
    let buttons = action.get("buttons").and_then(Value::as_array);
    let buttons = buttons.map(Vec::as_slice).unwrap_or(&[]);
    if buttons.is_empty() || buttons.len() > 3 {
        return Err(bad(format!(
            "buttons: {} given, 1 to 3 allowed",
            buttons.len()
        )));
    }
    let mut ids = Vec::new();
    for b in buttons {
        let reply = b.get("reply").unwrap_or(&Value::Null);
        text(reply, "title", 20, "button title")?;
        text(reply, "id", 256, "button id")?;
        let id = reply.get("id").and_then(Value::as_str).unwrap_or("");
        if ids.contains(&id) {
            return Err(bad("button ids must be unique"));
        }
        ids.push(id);
    }
    Ok(())
}

fn list_action(action: &Value) -> Result<(), Refusal> {
    text(action, "button", 20, "action.button")?;
    let sections = action.get("sections").and_then(Value::as_array);
    let sections = sections.map(Vec::as_slice).unwrap_or(&[]);
    let mut rows = 0;
    for s in sections {
        optional(s, "title", 24, "section title")?;
        for r in s
            .get("rows")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or(&[])
        {
            rows += 1;
            text(r, "id", 200, "row id")?;
            text(r, "title", 24, "row title")?;
            optional(r, "description", 72, "row description")?;
        }
    }
    if sections.is_empty() || rows == 0 || rows > 10 {
        return Err(bad(format!("list: {rows} rows given, 1 to 10 allowed")));
    }
    Ok(())
}

fn cta_url_action(action: &Value) -> Result<(), Refusal> {
    let p = action.get("parameters").unwrap_or(&Value::Null);
    text(p, "display_text", 20, "display_text")?;
    text(p, "url", 2000, "url")
}

fn coordinate(l: &Value, key: &str, max: f64) -> Result<(), Refusal> {
    let v = l.get(key).and_then(|v| {
        v.as_f64()
            .or_else(|| v.as_str().and_then(|s| s.parse::<f64>().ok()))
    });
    match v {
        Some(x) if x.is_finite() && x.abs() <= max => Ok(()),
        Some(_) => Err(bad(format!("{key} is out of range"))),
        None => Err(Refusal::new(
            400,
            131008,
            format!("location.{key} is required"),
        )),
    }
}

/// Checks the body of a send of `kind` (`other` holds the kind's object and `context`).
pub fn check(sim: &Sim, kind: &str, other: &Map<String, Value>) -> Result<(), Refusal> {
    let known = MEDIA.contains(&kind)
        || matches!(kind, "interactive" | "location" | "reaction" | "contacts");
    if !known {
        return Err(Refusal::new(
            400,
            131051,
            format!("message type {kind:?} is not supported"),
        ));
    }
    let obj = other
        .get(kind)
        .ok_or_else(|| Refusal::new(400, 131008, format!("the parameter {kind} is required")))?;
    if let Some(c) = other.get("context") {
        text(c, "message_id", 2000, "context.message_id")?;
    }
    match kind {
        "interactive" => interactive(sim, obj),
        "location" => {
            coordinate(obj, "latitude", 90.0)?;
            coordinate(obj, "longitude", 180.0)
        }
        "reaction" => {
            text(obj, "message_id", 2000, "reaction.message_id")?;
            match obj.get("emoji") {
                Some(Value::String(_)) => Ok(()),
                _ => Err(Refusal::new(400, 131008, "reaction.emoji is required")),
            }
        }
        "contacts" => crate::contacts::check(obj),
        media_kind => media(sim, media_kind, obj),
    }
}
