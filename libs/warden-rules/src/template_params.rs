//! What a template send gives for a template's variables, checked against the stored
//! template ([`TemplateSpec`]) and turned into the platform's `template.components`.
//!
//! A send gives body values as `variables` (an array, or an object of numbered or named
//! values) and/or `components` in the platform's shape (`header`, `body`, `button`
//! parameters). [`resolve`] checks them all (a header image needs an image parameter, a URL
//! button with a suffix needs its text, names and counts match) and answers the canonical
//! components: header, body, then buttons by index. The same function builds the
//! dispatcher's body, so what was checked is what is sent.

use serde_json::{Value, json};

use crate::template_spec::{
    Button, ButtonKind, HeaderFormat, ParameterFormat, TemplateSpec, is_param_name, named_params,
};
use crate::templates::{TemplateError, parse_variables, validate_variables};
use crate::text::{TextKind, check};

/// What a carousel, limited-time offer or authentication template takes at send time.
pub mod formats;

/// Why a send's template values do not fit the template; the text names what is missing
/// or wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ParamError(pub String);

fn perr(s: impl Into<String>) -> ParamError {
    ParamError(s.into())
}

/// Template body values as given: by position or by name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Variables {
    /// `["Ana", "42"]` or `{"1": "Ana"}`.
    Positional(Vec<String>),
    /// `{"first_name": "Ana"}`, in the order given.
    Named(Vec<(String, String)>),
}

/// Reads a `variables` parameter: an array or numbered object (positional, as before), or
/// an object whose keys are all parameter names (named).
pub fn parse_any_variables(value: &Value) -> Result<Variables, TemplateError> {
    if let Value::Object(map) = value
        && !map.is_empty()
        && map.keys().all(|k| k.trim().parse::<usize>().is_err())
        && map.keys().all(|k| is_param_name(k.trim()))
    {
        let mut out = Vec::with_capacity(map.len());
        for (k, v) in map {
            let text = match v {
                Value::String(s) => s.clone(),
                Value::Number(n) => n.to_string(),
                Value::Bool(b) => b.to_string(),
                _ => return Err(TemplateError::VariablesShape),
            };
            out.push((k.trim().to_owned(), text));
        }
        return Ok(Variables::Named(out));
    }
    parse_variables(value).map(Variables::Positional)
}

/// The platform `body` component carrying named values.
pub fn named_body_component(values: &[(String, String)]) -> Value {
    let parameters: Vec<Value> = values
        .iter()
        .map(|(n, v)| json!({"type": "text", "parameter_name": n, "text": v}))
        .collect();
    json!({"type": "body", "parameters": parameters})
}

fn text_param(p: &Value, what: &str) -> Result<String, ParamError> {
    let ty = p.get("type").and_then(Value::as_str).unwrap_or("");
    if !ty.eq_ignore_ascii_case("text") {
        return Err(perr(format!(
            "{what} must be a text parameter {{\"type\": \"text\", \"text\": \"...\"}}, not type {ty:?}"
        )));
    }
    let text = p
        .get("text")
        .and_then(Value::as_str)
        .ok_or_else(|| perr(format!("{what} needs its \"text\"")))?;
    if text.trim().is_empty() {
        return Err(perr(format!("{what} is empty; give a value")));
    }
    check(text, TextKind::TemplateParameter).map_err(|e| perr(format!("{what} {e}")))?;
    Ok(text.to_owned())
}

fn parameters<'a>(c: &'a Value, what: &str) -> Result<&'a [Value], ParamError> {
    match c.get("parameters") {
        Some(Value::Array(a)) => Ok(a),
        None | Some(Value::Null) => Ok(&[]),
        Some(_) => Err(perr(format!("{what}.parameters must be an array"))),
    }
}

/// Checks a media or location header parameter against the header's format.
fn header_media(p: &Value, format: HeaderFormat) -> Result<Value, ParamError> {
    let want = format.parameter_type();
    let ty = p
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_ascii_lowercase();
    if ty != want {
        return Err(perr(format!(
            "the template's header is {}, so the header parameter must be {{\"type\": \"{want}\", \"{want}\": {{...}}}}; got type {ty:?}",
            format.as_upper()
        )));
    }
    let inner = p
        .get(want)
        .and_then(Value::as_object)
        .ok_or_else(|| perr(format!("the header parameter needs a \"{want}\" object")))?;
    if format == HeaderFormat::Location {
        for key in ["latitude", "longitude"] {
            let ok = match inner.get(key) {
                Some(Value::Number(_)) => true,
                Some(Value::String(s)) => s.trim().parse::<f64>().is_ok(),
                _ => false,
            };
            if !ok {
                return Err(perr(format!(
                    "the header location needs a numeric \"{key}\""
                )));
            }
        }
    } else {
        let has = |k: &str| {
            inner
                .get(k)
                .and_then(Value::as_str)
                .is_some_and(|s| !s.trim().is_empty())
        };
        if !has("link") && !has("id") {
            return Err(perr(format!(
                "the header {want} needs a \"link\" (https URL) or an \"id\" (an uploaded media id)"
            )));
        }
        if let Some(link) = inner.get("link").and_then(Value::as_str)
            && !(link.starts_with("https://") || link.starts_with("http://"))
        {
            return Err(perr(format!(
                "the header {want} link must start with https:// or http://"
            )));
        }
    }
    let mut out = json!({"type": want});
    out[want] = Value::Object(inner.clone());
    Ok(out)
}

/// Checks a send's values against `spec` and answers the platform `components` to send
/// (header, body, buttons by index; empty when the template takes nothing). `variables`
/// are positional body values; `components` the caller's platform-shape components (a
/// named body travels there, see [`named_body_component`]).
pub fn resolve(
    spec: &TemplateSpec,
    variables: &[String],
    components: &[Value],
) -> Result<Vec<Value>, ParamError> {
    // A format's own values (cards, the offer's expiry, the code) are taken out first.
    let (components, format_values) = formats::split(spec, variables, components)?;
    // The platform's order: header, body, then the buttons by index.
    let mut given = Given::sort(&components)?;
    let mut out = Vec::new();
    out.extend(resolve_header(spec, given.header)?);
    out.extend(resolve_body(spec, variables, given.body)?);
    given.buttons.sort_by_key(|(i, _)| *i);
    check_button_sub_types(spec, &given.buttons)?;
    for (index, b) in spec.buttons.iter().enumerate() {
        let c = given
            .buttons
            .iter()
            .find(|(i, _)| *i == index)
            .map(|(_, c)| *c);
        if let Some(param) = button_parameter(index, b, c)? {
            out.push(json!({
                "type": "button",
                "sub_type": b.kind.sub_type(),
                "index": index.to_string(),
                "parameters": [param],
            }));
        }
    }
    formats::finish(spec, &format_values, &mut out)?;
    Ok(out)
}

/// The caller's components by slot: at most one header and one body, buttons by index.
struct Given<'a> {
    header: Option<&'a Value>,
    body: Option<&'a Value>,
    buttons: Vec<(usize, &'a Value)>,
}

impl<'a> Given<'a> {
    fn sort(components: &'a [Value]) -> Result<Given<'a>, ParamError> {
        let mut given = Given {
            header: None,
            body: None,
            buttons: Vec::new(),
        };
        for (i, c) in components.iter().enumerate() {
            let ty = c
                .get("type")
                .and_then(Value::as_str)
                .ok_or_else(|| {
                    perr(format!(
                        "components[{i}] needs a \"type\": header, body or button"
                    ))
                })?
                .to_ascii_lowercase();
            let slot = match ty.as_str() {
                "header" => &mut given.header,
                "body" => &mut given.body,
                "button" | "buttons" => {
                    let index = button_index(i, c)?;
                    if given.buttons.iter().any(|(j, _)| *j == index) {
                        return Err(perr(format!("components give button index {index} twice")));
                    }
                    given.buttons.push((index, c));
                    continue;
                }
                other => {
                    return Err(perr(format!(
                        "components[{i}] has type {other:?}; use header, body or button"
                    )));
                }
            };
            if slot.is_some() {
                return Err(perr(format!("components give the {ty} twice")));
            }
            *slot = Some(c);
        }
        Ok(given)
    }
}

/// The `index` of button component `i` (a number or a numeric string).
fn button_index(i: usize, c: &Value) -> Result<usize, ParamError> {
    match c.get("index") {
        Some(Value::Number(n)) => n.as_u64().map(|n| n as usize),
        Some(Value::String(s)) => s.trim().parse().ok(),
        _ => None,
    }
    .ok_or_else(|| {
        perr(format!(
            "components[{i}] (a button) needs its \"index\", 0 for the first button"
        ))
    })
}

/// The header component to send, if the template's header takes a parameter.
fn resolve_header(spec: &TemplateSpec, given: Option<&Value>) -> Result<Option<Value>, ParamError> {
    match (spec.header.as_ref(), given) {
        (None, Some(_)) => Err(perr(
            "the template has no header, so components may not hold a header parameter",
        )),
        (Some(h), given) => match h.format {
            HeaderFormat::Text => text_header(spec, given),
            format => media_header(format, given).map(Some),
        },
        (None, None) => Ok(None),
    }
}

/// A text header: one text parameter when its text has a variable (named as in the
/// template when the template names its parameters), none otherwise.
fn text_header(spec: &TemplateSpec, given: Option<&Value>) -> Result<Option<Value>, ParamError> {
    match (spec.header_variable(), given) {
        (None, Some(_)) => Err(perr(
            "the template's header text has no variable, so it takes no header parameter",
        )),
        (Some(name), Some(c)) => {
            let ps = parameters(c, "the header")?;
            if ps.len() != 1 {
                return Err(perr(format!(
                    "the template's header has 1 variable, so the header takes exactly 1 parameter, but {} were given",
                    ps.len()
                )));
            }
            let value = text_param(&ps[0], "the header parameter")?;
            let mut p = json!({"type": "text", "text": value});
            if let Some(name) = name {
                let given_name = ps[0].get("parameter_name").and_then(Value::as_str);
                if given_name != Some(name.as_str()) {
                    return Err(perr(format!(
                        "the header parameter must be named {name:?} (parameter_name), as in the template"
                    )));
                }
                p["parameter_name"] = json!(name);
            }
            Ok(Some(json!({"type": "header", "parameters": [p]})))
        }
        (Some(_), None) => Err(perr(
            "the template's header has a variable: add {\"type\": \"header\", \"parameters\": [{\"type\": \"text\", \"text\": \"...\"}]} to components",
        )),
        (None, None) => Ok(None),
    }
}

/// A media header (image, video, document): exactly one parameter of its type.
fn media_header(format: HeaderFormat, given: Option<&Value>) -> Result<Value, ParamError> {
    let want = format.parameter_type();
    let Some(c) = given else {
        return Err(perr(format!(
            "the template's header is {}: add {{\"type\": \"header\", \"parameters\": [{{\"type\": \"{want}\", \"{want}\": {{\"link\": \"https://...\"}}}}]}} to components",
            format.as_upper()
        )));
    };
    let ps = parameters(c, "the header")?;
    if ps.len() != 1 {
        return Err(perr(format!(
            "the header takes exactly 1 {want} parameter, but {} were given",
            ps.len()
        )));
    }
    Ok(json!({"type": "header", "parameters": [header_media(&ps[0], format)?]}))
}

/// The body component to send, if the body takes values: from `variables` or from the
/// caller's body component (never both), as the template's parameter format wants them.
fn resolve_body(
    spec: &TemplateSpec,
    variables: &[String],
    body: Option<&Value>,
) -> Result<Option<Value>, ParamError> {
    if body.is_some() && !variables.is_empty() {
        return Err(perr(
            "give the body's values either in variables or in a body component, not both",
        ));
    }
    let (positional, named) = match body {
        None => (variables.to_vec(), Vec::new()),
        Some(c) => body_values(c)?,
    };
    match spec.parameter_format {
        ParameterFormat::Positional => positional_body(spec, &positional, &named),
        ParameterFormat::Named => named_body(spec, &positional, &named),
    }
}

/// A body component's values: positional, or named by `parameter_name` (not a mix).
#[allow(clippy::type_complexity)] // the two shapes a body's values come in
fn body_values(c: &Value) -> Result<(Vec<String>, Vec<(String, String)>), ParamError> {
    let ps = parameters(c, "the body")?;
    let mut pos = Vec::new();
    let mut named = Vec::new();
    for (i, p) in ps.iter().enumerate() {
        let value = text_param(p, &format!("body parameter {}", i + 1))?;
        match p.get("parameter_name").and_then(Value::as_str) {
            Some(n) => named.push((n.to_owned(), value)),
            None => pos.push(value),
        }
    }
    if !pos.is_empty() && !named.is_empty() {
        return Err(perr(
            "body parameters are either all named (parameter_name) or all positional",
        ));
    }
    Ok((pos, named))
}

/// A `{{1}}`, `{{2}}` body: one value per placeholder, in order.
fn positional_body(
    spec: &TemplateSpec,
    positional: &[String],
    named: &[(String, String)],
) -> Result<Option<Value>, ParamError> {
    if !named.is_empty() {
        return Err(perr(
            "the template uses positional parameters ({{1}}, {{2}}, ...), so pass variables as a JSON array, not named values",
        ));
    }
    validate_variables(&spec.body, positional).map_err(|e| perr(e.to_string()))?;
    if positional.is_empty() {
        return Ok(None);
    }
    let ps: Vec<Value> = positional
        .iter()
        .map(|v| json!({"type": "text", "text": v}))
        .collect();
    Ok(Some(json!({"type": "body", "parameters": ps})))
}

/// A `{{name}}` body: every name once, none the template lacks, none missing.
fn named_body(
    spec: &TemplateSpec,
    positional: &[String],
    named: &[(String, String)],
) -> Result<Option<Value>, ParamError> {
    let wanted = named_params(&spec.body);
    if !positional.is_empty() {
        return Err(perr(format!(
            "the template uses named parameters ({}), so pass variables as a JSON object keyed by those names",
            wanted
                .iter()
                .map(|n| format!("{{{{{n}}}}}"))
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    for (i, (n, _)) in named.iter().enumerate() {
        if named[..i].iter().any(|(m, _)| m == n) {
            return Err(perr(format!("variable {n:?} is given twice")));
        }
        if !wanted.contains(n) {
            return Err(perr(format!("the template has no parameter {{{{{n}}}}}")));
        }
        if let Err(e) = check(&named[i].1, TextKind::TemplateParameter) {
            return Err(perr(format!("variable {n} {e}")));
        }
    }
    if let Some(missing) = wanted.iter().find(|w| !named.iter().any(|(n, _)| n == *w)) {
        return Err(perr(format!(
            "variable {missing:?} is missing; the template's body uses {{{{{missing}}}}}"
        )));
    }
    if named.is_empty() {
        return Ok(None);
    }
    // In the template's order, so the same values always make the same body.
    let ordered: Vec<(String, String)> = wanted
        .iter()
        .filter_map(|w| named.iter().find(|(n, _)| n == w).cloned())
        .collect();
    Ok(Some(named_body_component(&ordered)))
}

/// Every button component names a button of the template, by its sub_type.
fn check_button_sub_types(
    spec: &TemplateSpec,
    buttons: &[(usize, &Value)],
) -> Result<(), ParamError> {
    for (index, c) in buttons {
        let Some(b) = spec.buttons.get(*index) else {
            return Err(perr(format!(
                "components name button index {index}, but the template has {} button(s)",
                spec.buttons.len()
            )));
        };
        let given = c
            .get("sub_type")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_ascii_lowercase();
        if given != b.kind.sub_type() {
            return Err(perr(format!(
                "button {index} is {} in the template, so its sub_type must be {:?}, not {given:?}",
                b.kind.as_upper(),
                b.kind.sub_type()
            )));
        }
    }
    Ok(())
}

/// Button `index`'s parameter to send, from its component `given`; None for a button that
/// takes none (a fixed URL or number, a quick reply left to its default payload).
fn button_parameter(
    index: usize,
    b: &Button,
    given: Option<&Value>,
) -> Result<Option<Value>, ParamError> {
    let what = format!("button {index} ({})", b.kind.as_upper());
    let param = match b.kind {
        ButtonKind::Url if b.has_url_variable() => {
            let c = given.ok_or_else(|| {
                perr(format!(
                    "{what} has a URL ending in {{{{1}}}}: add {{\"type\": \"button\", \"sub_type\": \"url\", \"index\": \"{index}\", \"parameters\": [{{\"type\": \"text\", \"text\": \"...\"}}]}} to components"
                ))
            })?;
            single_text(c, &what, "the URL suffix")?
        }
        ButtonKind::Otp => {
            let c = given.ok_or_else(|| {
                perr(format!(
                    "{what} needs the code: add {{\"type\": \"button\", \"sub_type\": \"url\", \"index\": \"{index}\", \"parameters\": [{{\"type\": \"text\", \"text\": \"<code>\"}}]}} to components"
                ))
            })?;
            single_text(c, &what, "the code")?
        }
        ButtonKind::CopyCode => {
            let c = given.ok_or_else(|| {
                perr(format!(
                    "{what} needs the code to copy: add {{\"type\": \"button\", \"sub_type\": \"copy_code\", \"index\": \"{index}\", \"parameters\": [{{\"type\": \"coupon_code\", \"coupon_code\": \"...\"}}]}} to components"
                ))
            })?;
            coupon_code(c, &what)?
        }
        ButtonKind::QuickReply => {
            let Some(c) = given else { return Ok(None) };
            let ps = parameters(c, &what)?;
            match ps {
                [p] if p.get("type").and_then(Value::as_str) == Some("payload")
                    && p.get("payload").and_then(Value::as_str).is_some() =>
                {
                    json!({"type": "payload", "payload": p["payload"]})
                }
                _ => {
                    return Err(perr(format!(
                        "{what} takes exactly 1 parameter {{\"type\": \"payload\", \"payload\": \"...\"}}"
                    )));
                }
            }
        }
        // The token and first data; left out, the platform opens the flow without them.
        ButtonKind::Flow => {
            let Some(c) = given else { return Ok(None) };
            crate::template_spec::flow::send_parameter(parameters(c, &what)?, &what)
                .map_err(perr)?
        }
        ButtonKind::Url | ButtonKind::PhoneNumber => {
            if given.is_some() {
                return Err(perr(format!(
                    "{what} takes no parameter (its URL or number is fixed)"
                )));
            }
            return Ok(None);
        }
    };
    Ok(Some(param))
}

/// A URL or OTP button's one text parameter (`what_it_is`: what the text stands for).
fn single_text(c: &Value, what: &str, what_it_is: &str) -> Result<Value, ParamError> {
    let ps = parameters(c, what)?;
    if ps.len() != 1 {
        return Err(perr(format!(
            "{what} takes exactly 1 text parameter ({what_it_is}), but {} were given",
            ps.len()
        )));
    }
    Ok(json!({"type": "text", "text": text_param(&ps[0], &format!("{what}'s parameter"))?}))
}

/// A copy-code button's one coupon_code parameter, within the platform's length.
fn coupon_code(c: &Value, what: &str) -> Result<Value, ParamError> {
    let ps = parameters(c, what)?;
    let code = match ps {
        [p] if p.get("type").and_then(Value::as_str) == Some("coupon_code") => {
            p.get("coupon_code").and_then(Value::as_str).unwrap_or("")
        }
        _ => {
            return Err(perr(format!(
                "{what} takes exactly 1 parameter {{\"type\": \"coupon_code\", \"coupon_code\": \"...\"}}"
            )));
        }
    };
    if code.trim().is_empty() || code.chars().count() > crate::template_spec::MAX_COPY_CODE_CHARS {
        return Err(perr(format!(
            "{what}'s coupon_code must be 1 to {} characters",
            crate::template_spec::MAX_COPY_CODE_CHARS
        )));
    }
    Ok(json!({"type": "coupon_code", "coupon_code": code}))
}

#[cfg(test)]
mod tests;
