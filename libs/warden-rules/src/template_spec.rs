//! A template's components as created: header, body, footer, buttons and the parameter
//! format, checked with the platform's rules before the upstream call.
//!
//! The tool takes `header` (`{format, text?}`), `footer` and `buttons` (`[{type, text, url?,
//! phone_number?, example?, otp_type?}]`); the platform and the store keep the same thing as
//! the create request's `components` (`HEADER`, `BODY`, `FOOTER`, `BUTTONS`), so one parser
//! reads both ([`TemplateSpec::from_components`]). Every refusal names the field and the limit.

use serde_json::{Map, Value, json};

use crate::kinds::TemplateCategory;
use crate::templates::{placeholders, validate_template_body};

/// Carousel, limited-time offer and authentication templates: each format's rules in its
/// own file, reached through [`formats::TemplateFormat`].
pub mod formats;
pub use formats::TemplateFormat;

/// Longest header text (platform).
pub const MAX_HEADER_CHARS: usize = 60;
/// Longest footer text (platform).
pub const MAX_FOOTER_CHARS: usize = 60;
/// Most buttons on one template (platform).
pub const MAX_BUTTONS: usize = 10;
/// Most URL buttons (platform).
pub const MAX_URL_BUTTONS: usize = 2;
/// Most phone-number buttons (platform).
pub const MAX_PHONE_BUTTONS: usize = 1;
/// Most copy-code buttons (platform).
pub const MAX_COPY_CODE_BUTTONS: usize = 1;
/// Longest button label (platform).
pub const MAX_BUTTON_TEXT_CHARS: usize = 25;
/// Longest button URL (platform).
pub const MAX_URL_CHARS: usize = 2000;
/// Longest copy-code example (platform).
pub const MAX_COPY_CODE_CHARS: usize = 15;
/// Longest named parameter (platform).
pub const MAX_PARAM_NAME_CHARS: usize = 64;

/// A template field that breaks a rule: `field` is the parameter (or `buttons[2].url`),
/// `problem` says the rule and the limit.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field} {problem}")]
pub struct SpecError {
    /// The parameter, e.g. `header.text` or `buttons[3]`.
    pub field: String,
    /// What is wrong, with the limit.
    pub problem: String,
}

pub(crate) fn err(field: impl Into<String>, problem: impl Into<String>) -> SpecError {
    SpecError {
        field: field.into(),
        problem: problem.into(),
    }
}

/// How placeholders are written: `{{1}}` (positional) or `{{first_name}}` (named).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ParameterFormat {
    /// `{{1}}`, `{{2}}`, ... (the default).
    #[default]
    Positional,
    /// `{{first_name}}`: lower-case letters, digits and underscores.
    Named,
}

impl ParameterFormat {
    /// Reads `positional` / `named` (any case); absent or empty is positional.
    pub fn parse(s: Option<&str>) -> Result<Self, SpecError> {
        match s.map(|s| s.trim().to_ascii_lowercase()).as_deref() {
            None | Some("") | Some("positional") => Ok(Self::Positional),
            Some("named") => Ok(Self::Named),
            Some(other) => Err(err(
                "parameter_format",
                format!("must be positional or named, not {other:?}"),
            )),
        }
    }

    /// `positional` / `named`, as stored and shown.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Positional => "positional",
            Self::Named => "named",
        }
    }
}

/// What a header shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeaderFormat {
    /// Text, at most 60 characters with at most one variable.
    Text,
    /// An image given at send time.
    Image,
    /// A video given at send time.
    Video,
    /// A document given at send time.
    Document,
    /// A location given at send time.
    Location,
}

impl HeaderFormat {
    /// `TEXT`, `IMAGE`, ... as the platform writes it.
    pub fn as_upper(self) -> &'static str {
        match self {
            Self::Text => "TEXT",
            Self::Image => "IMAGE",
            Self::Video => "VIDEO",
            Self::Document => "DOCUMENT",
            Self::Location => "LOCATION",
        }
    }

    /// The send-time parameter type (`text`, `image`, ...).
    pub fn parameter_type(self) -> &'static str {
        match self {
            Self::Text => "text",
            Self::Image => "image",
            Self::Video => "video",
            Self::Document => "document",
            Self::Location => "location",
        }
    }

    fn parse(s: &str) -> Option<Self> {
        Some(match s.trim().to_ascii_uppercase().as_str() {
            "TEXT" => Self::Text,
            "IMAGE" => Self::Image,
            "VIDEO" => Self::Video,
            "DOCUMENT" => Self::Document,
            "LOCATION" => Self::Location,
            _ => return None,
        })
    }
}

/// A template header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header {
    /// What it shows.
    pub format: HeaderFormat,
    /// The text of a TEXT header.
    pub text: Option<String>,
}

/// The kinds of template button.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ButtonKind {
    /// A reply button; grouped together.
    QuickReply,
    /// Opens a URL, optionally ending in `{{1}}` filled at send time.
    Url,
    /// Calls a number.
    PhoneNumber,
    /// Copies a code given at send time.
    CopyCode,
    /// One-time password (AUTHENTICATION templates only).
    Otp,
    /// Opens a Flow (`flow`).
    Flow,
}

impl ButtonKind {
    /// `QUICK_REPLY`, `URL`, ... as the platform writes it.
    pub fn as_upper(self) -> &'static str {
        match self {
            Self::QuickReply => "QUICK_REPLY",
            Self::Url => "URL",
            Self::PhoneNumber => "PHONE_NUMBER",
            Self::CopyCode => "COPY_CODE",
            Self::Otp => "OTP",
            Self::Flow => "FLOW",
        }
    }

    /// The send-time `sub_type` of this button's component (`url`, ...); OTP codes travel
    /// as a `url` button parameter on the platform.
    pub fn sub_type(self) -> &'static str {
        match self {
            Self::QuickReply => "quick_reply",
            Self::Url | Self::Otp => "url",
            Self::PhoneNumber => "phone_number",
            Self::CopyCode => "copy_code",
            Self::Flow => "flow",
        }
    }

    fn parse(s: &str) -> Option<Self> {
        Some(match s.trim().to_ascii_uppercase().as_str() {
            "QUICK_REPLY" => Self::QuickReply,
            "URL" => Self::Url,
            "PHONE_NUMBER" => Self::PhoneNumber,
            "COPY_CODE" => Self::CopyCode,
            "OTP" => Self::Otp,
            "FLOW" => Self::Flow,
            _ => return None,
        })
    }
}

/// One template button.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Button {
    /// Its kind.
    pub kind: ButtonKind,
    /// Its label (OTP buttons may leave it empty).
    pub text: String,
    /// URL buttons: the address, optionally ending in `{{1}}`.
    pub url: Option<String>,
    /// PHONE_NUMBER buttons: the number.
    pub phone_number: Option<String>,
    /// COPY_CODE buttons: an example code.
    pub example: Option<String>,
    /// OTP buttons: COPY_CODE, ONE_TAP or ZERO_TAP.
    pub otp_type: Option<String>,
    /// FLOW buttons: the flow it opens and how.
    pub flow: Option<flow::FlowButton>,
}

impl Button {
    /// A URL button whose address ends in `{{1}}` (a send fills the suffix).
    pub fn has_url_variable(&self) -> bool {
        self.kind == ButtonKind::Url && self.url.as_deref().is_some_and(|u| u.contains("{{"))
    }
}

/// Everything a template is made of.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TemplateSpec {
    /// `{{1}}` or `{{name}}` placeholders.
    pub parameter_format: ParameterFormat,
    /// The header, if any.
    pub header: Option<Header>,
    /// The body text.
    pub body: String,
    /// The footer, if any.
    pub footer: Option<String>,
    /// The buttons, in order (their index is their position).
    pub buttons: Vec<Button>,
    /// A carousel, a limited-time offer or an authentication template; `Standard` otherwise.
    pub format: TemplateFormat,
}

fn str_field<'a>(
    o: &'a Map<String, Value>,
    key: &str,
    field: &str,
) -> Result<Option<&'a str>, SpecError> {
    match o.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.as_str())),
        Some(_) => Err(err(format!("{field}.{key}"), "must be a string")),
    }
}

/// Reads the `header` parameter: `{"format": "TEXT|IMAGE|VIDEO|DOCUMENT|LOCATION", "text": ...}`.
pub fn parse_header(value: &Value) -> Result<Header, SpecError> {
    let o = value.as_object().ok_or_else(|| {
        err(
            "header",
            "must be a JSON object like {\"format\": \"TEXT\", \"text\": \"...\"}",
        )
    })?;
    for key in o.keys() {
        if !matches!(key.as_str(), "format" | "text" | "type" | "example") {
            return Err(err(
                "header",
                format!("has an unknown key {key:?}; use format and text"),
            ));
        }
    }
    let raw = str_field(o, "format", "header")?.ok_or_else(|| {
        err(
            "header.format",
            "is required: TEXT, IMAGE, VIDEO, DOCUMENT or LOCATION",
        )
    })?;
    let format = HeaderFormat::parse(raw).ok_or_else(|| {
        err(
            "header.format",
            format!("must be TEXT, IMAGE, VIDEO, DOCUMENT or LOCATION, not {raw:?}"),
        )
    })?;
    let text = str_field(o, "text", "header")?.map(str::to_owned);
    Ok(Header { format, text })
}

/// Reads the `buttons` parameter: a JSON array of `{type, text, url?, phone_number?,
/// example?, otp_type?}`.
pub fn parse_buttons(value: &Value) -> Result<Vec<Button>, SpecError> {
    let items = value.as_array().ok_or_else(|| {
        err(
            "buttons",
            "must be a JSON array of {type, text, ...} objects",
        )
    })?;
    items
        .iter()
        .enumerate()
        .map(|(i, b)| {
            let field = format!("buttons[{i}]");
            let o = b
                .as_object()
                .ok_or_else(|| err(&field, "must be an object {type, text, ...}"))?;
            for key in o.keys() {
                if !matches!(
                    key.as_str(),
                    "type" | "text" | "url" | "phone_number" | "example" | "otp_type"
                ) && !flow::FLOW_KEYS.contains(&key.as_str())
                    && !formats::authentication::is_otp_key(key)
                {
                    return Err(err(&field, format!("has an unknown key {key:?}")));
                }
            }
            let raw = str_field(o, "type", &field)?.ok_or_else(|| {
                err(
                    format!("{field}.type"),
                    "is required: QUICK_REPLY, URL, PHONE_NUMBER, COPY_CODE, OTP or FLOW",
                )
            })?;
            let kind = ButtonKind::parse(raw).ok_or_else(|| {
                err(
                    format!("{field}.type"),
                    format!(
                        "must be QUICK_REPLY, URL, PHONE_NUMBER, COPY_CODE, OTP or FLOW, not {raw:?}"
                    ),
                )
            })?;
            // The platform writes examples as arrays (`["https://x/abc"]`); take the first.
            // Only a copy-code button keeps its example; a URL's is derived on create.
            let example = match o.get("example").filter(|_| kind == ButtonKind::CopyCode) {
                Some(Value::Array(a)) => a.first().and_then(Value::as_str).map(str::to_owned),
                Some(Value::String(s)) => Some(s.clone()),
                _ => None,
            };
            Ok(Button {
                kind,
                text: str_field(o, "text", &field)?.unwrap_or_default().to_owned(),
                url: str_field(o, "url", &field)?.map(str::to_owned),
                phone_number: str_field(o, "phone_number", &field)?.map(str::to_owned),
                example,
                otp_type: str_field(o, "otp_type", &field)?.map(str::to_owned),
                flow: flow::read(o, kind == ButtonKind::Flow, &field)?,
            })
        })
        .collect()
}

/// Every `{{...}}` token in `text` (the part between the braces), in order.
pub fn tokens(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("{{") {
        let after = &rest[start + 2..];
        match after.find("}}") {
            Some(end) if !after[..end].contains('{') => {
                out.push(&after[..end]);
                rest = &after[end + 2..];
            }
            _ => rest = &rest[start + 2..],
        }
    }
    out
}

/// A named parameter: lower-case letters, digits and underscores, not starting with a
/// digit, at most 64 characters.
pub fn is_param_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_PARAM_NAME_CHARS
        && !name.as_bytes()[0].is_ascii_digit()
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
}

/// The distinct named parameters of `text`, in first-use order.
pub fn named_params(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for t in tokens(text) {
        if is_param_name(t) && !out.iter().any(|o| o == t) {
            out.push(t.to_owned());
        }
    }
    out
}

/// Checks the placeholders of `text` (`field`) for a named template: each is a valid name.
fn check_named_text(text: &str, field: &str) -> Result<(), SpecError> {
    for t in tokens(text) {
        if t.bytes().all(|b| b.is_ascii_digit()) {
            return Err(err(
                field,
                format!(
                    "uses {{{{{t}}}}}, but a named template takes only named parameters like {{{{first_name}}}}"
                ),
            ));
        }
        if !is_param_name(t) {
            return Err(err(
                field,
                format!(
                    "has parameter {{{{{t}}}}}; named parameters use only lower-case letters, digits and underscores (at most {MAX_PARAM_NAME_CHARS}, not starting with a digit)"
                ),
            ));
        }
    }
    Ok(())
}

/// The variables of a header text: 0 or 1 names (named) or numbers (positional).
fn header_variables(text: &str, format: ParameterFormat) -> usize {
    match format {
        ParameterFormat::Positional => placeholders(text).len(),
        ParameterFormat::Named => named_params(text).len(),
    }
}

impl TemplateSpec {
    /// True when the template is only a body with positional placeholders (what the
    /// service stored before components existed).
    pub fn is_body_only(&self) -> bool {
        self.header.is_none()
            && self.footer.is_none()
            && self.buttons.is_empty()
            && self.parameter_format == ParameterFormat::Positional
            && self.format == TemplateFormat::Standard
    }

    /// The header's variable, when it has one: `Some(None)` positional (`{{1}}`),
    /// `Some(Some(name))` named.
    pub fn header_variable(&self) -> Option<Option<String>> {
        let h = self
            .header
            .as_ref()
            .filter(|h| h.format == HeaderFormat::Text)?;
        let text = h.text.as_deref()?;
        match self.parameter_format {
            ParameterFormat::Positional => (!placeholders(text).is_empty()).then_some(None),
            ParameterFormat::Named => named_params(text).into_iter().next().map(Some),
        }
    }

    /// Checks every component with the platform's rules for a template of `category`.
    pub fn validate(&self, category: TemplateCategory) -> Result<(), SpecError> {
        // A format's own rules first: its category and the parts it may not have.
        self.format.validate(self, category)?;
        match self.parameter_format {
            ParameterFormat::Positional => {
                validate_template_body(&self.body).map_err(|e| err("body_text", e.to_string()))?
            }
            ParameterFormat::Named => {
                validate_template_body(&self.body).map_err(|e| err("body_text", e.to_string()))?;
                check_named_text(&self.body, "body_text")?;
            }
        }
        if let Some(h) = &self.header {
            match (h.format, h.text.as_deref()) {
                (HeaderFormat::Text, None) => {
                    return Err(err("header.text", "is required for a TEXT header"));
                }
                (HeaderFormat::Text, Some(text)) => {
                    let count = text.chars().count();
                    if text.trim().is_empty() {
                        return Err(err("header.text", "is empty"));
                    }
                    if count > MAX_HEADER_CHARS {
                        return Err(err(
                            "header.text",
                            format!(
                                "has {count} characters; at most {MAX_HEADER_CHARS} are allowed"
                            ),
                        ));
                    }
                    crate::text::check(text, crate::text::TextKind::Plain)
                        .map_err(|e| err("header.text", e.to_string()))?;
                    if self.parameter_format == ParameterFormat::Named {
                        check_named_text(text, "header.text")?;
                    } else if tokens(text).iter().any(|t| *t != "1") {
                        return Err(err(
                            "header.text",
                            "may hold only the variable {{1}} (a header has at most 1 variable)",
                        ));
                    }
                    let vars = tokens(text).len();
                    if vars > 1 || header_variables(text, self.parameter_format) > 1 {
                        return Err(err(
                            "header.text",
                            format!("has {vars} variables; a header has at most 1"),
                        ));
                    }
                }
                (format, Some(_)) => {
                    return Err(err(
                        "header.text",
                        format!(
                            "is only for a TEXT header; a {} header takes its media or location when sent",
                            format.as_upper()
                        ),
                    ));
                }
                (_, None) => {}
            }
        }
        if let Some(f) = &self.footer {
            let count = f.chars().count();
            if f.trim().is_empty() {
                return Err(err("footer", "is empty; leave it out instead"));
            }
            if count > MAX_FOOTER_CHARS {
                return Err(err(
                    "footer",
                    format!("has {count} characters; at most {MAX_FOOTER_CHARS} are allowed"),
                ));
            }
            if !tokens(f).is_empty() {
                return Err(err("footer", "may not hold variables"));
            }
            crate::text::check(f, crate::text::TextKind::Plain)
                .map_err(|e| err("footer", e.to_string()))?;
        }
        self.validate_buttons(category)
    }

    fn validate_buttons(&self, category: TemplateCategory) -> Result<(), SpecError> {
        let b = &self.buttons;
        if b.len() > MAX_BUTTONS {
            return Err(err(
                "buttons",
                format!("has {} buttons; at most {MAX_BUTTONS} are allowed", b.len()),
            ));
        }
        let count = |k: ButtonKind| b.iter().filter(|x| x.kind == k).count();
        for (kind, max) in [
            (ButtonKind::Url, MAX_URL_BUTTONS),
            (ButtonKind::PhoneNumber, MAX_PHONE_BUTTONS),
            (ButtonKind::CopyCode, MAX_COPY_CODE_BUTTONS),
            (ButtonKind::Otp, 1),
            (ButtonKind::Flow, flow::MAX_FLOW_BUTTONS),
        ] {
            let n = count(kind);
            if n > max {
                return Err(err(
                    "buttons",
                    format!(
                        "has {n} {} buttons; at most {max} {} allowed",
                        kind.as_upper(),
                        if max == 1 { "is" } else { "are" }
                    ),
                ));
            }
        }
        // Quick replies must sit together (all before or all after the others).
        let qr: Vec<usize> = b
            .iter()
            .enumerate()
            .filter(|(_, x)| x.kind == ButtonKind::QuickReply)
            .map(|(i, _)| i)
            .collect();
        if let (Some(first), Some(last)) = (qr.first(), qr.last())
            && last - first + 1 != qr.len()
        {
            return Err(err(
                "buttons",
                "must keep QUICK_REPLY buttons together (all before or all after the other buttons)",
            ));
        }
        let auth = category == TemplateCategory::Authentication;
        for (i, x) in b.iter().enumerate() {
            let field = format!("buttons[{i}]");
            if auth && x.kind != ButtonKind::Otp {
                return Err(err(
                    &field,
                    "is not OTP; an AUTHENTICATION template takes only an OTP button",
                ));
            }
            if !auth && x.kind == ButtonKind::Otp {
                return Err(err(
                    &field,
                    "is OTP, which only AUTHENTICATION templates may have",
                ));
            }
            let chars = x.text.chars().count();
            if x.kind != ButtonKind::Otp && x.text.trim().is_empty() {
                return Err(err(format!("{field}.text"), "is required"));
            }
            if chars > MAX_BUTTON_TEXT_CHARS {
                return Err(err(
                    format!("{field}.text"),
                    format!("has {chars} characters; at most {MAX_BUTTON_TEXT_CHARS} are allowed"),
                ));
            }
            crate::text::check(&x.text, crate::text::TextKind::Plain)
                .map_err(|e| err(format!("{field}.text"), e.to_string()))?;
            match x.kind {
                ButtonKind::Url => {
                    let url = x.url.as_deref().unwrap_or("").trim();
                    if url.is_empty() {
                        return Err(err(format!("{field}.url"), "is required for a URL button"));
                    }
                    if !(url.starts_with("https://") || url.starts_with("http://")) {
                        return Err(err(
                            format!("{field}.url"),
                            "must start with https:// or http://",
                        ));
                    }
                    if url.chars().count() > MAX_URL_CHARS {
                        return Err(err(
                            format!("{field}.url"),
                            format!("is longer than {MAX_URL_CHARS} characters"),
                        ));
                    }
                    let t = tokens(url);
                    if !t.is_empty() && (t != ["1"] || !url.ends_with("{{1}}")) {
                        return Err(err(
                            format!("{field}.url"),
                            "may hold one variable, {{1}}, and only at its end (e.g. https://shop.example/track/{{1}})",
                        ));
                    }
                }
                ButtonKind::PhoneNumber => {
                    let p = x.phone_number.as_deref().unwrap_or("").trim();
                    let digits = p.trim_start_matches('+');
                    if digits.is_empty()
                        || digits.len() > 20
                        || !digits.bytes().all(|c| c.is_ascii_digit())
                    {
                        return Err(err(
                            format!("{field}.phone_number"),
                            "is required: digits with an optional leading +, at most 20",
                        ));
                    }
                }
                ButtonKind::CopyCode => {
                    let e = x.example.as_deref().unwrap_or("");
                    let n = e.chars().count();
                    if e.trim().is_empty() || n > MAX_COPY_CODE_CHARS {
                        return Err(err(
                            format!("{field}.example"),
                            format!(
                                "is required: an example code of 1 to {MAX_COPY_CODE_CHARS} characters"
                            ),
                        ));
                    }
                }
                ButtonKind::Otp => {
                    if let Some(t) = x.otp_type.as_deref()
                        && !matches!(
                            t.to_ascii_uppercase().as_str(),
                            "COPY_CODE" | "ONE_TAP" | "ZERO_TAP"
                        )
                    {
                        return Err(err(
                            format!("{field}.otp_type"),
                            "must be COPY_CODE, ONE_TAP or ZERO_TAP",
                        ));
                    }
                }
                ButtonKind::Flow => x.flow.clone().unwrap_or_default().validate(&field)?,
                ButtonKind::QuickReply => {}
            }
        }
        Ok(())
    }

    /// The create request's `components` (HEADER, BODY, FOOTER, BUTTONS), with the example
    /// values the platform asks for when there are variables. Also what the store keeps.
    pub fn to_components(&self) -> Vec<Value> {
        let named = self.parameter_format == ParameterFormat::Named;
        let mut out = Vec::new();
        if let Some(h) = &self.header {
            let mut c = json!({"type": "HEADER", "format": h.format.as_upper()});
            if let Some(text) = &h.text {
                c["text"] = json!(text);
                match self.header_variable() {
                    Some(Some(name)) => {
                        c["example"] = json!({"header_text_named_params": [{"param_name": name, "example": "example"}]})
                    }
                    Some(None) => c["example"] = json!({"header_text": ["example"]}),
                    None => {}
                }
            }
            out.push(c);
        }
        let mut body = json!({"type": "BODY", "text": self.body});
        if named {
            let params: Vec<Value> = named_params(&self.body)
                .into_iter()
                .map(|n| json!({"param_name": n, "example": format!("example_{n}")}))
                .collect();
            if !params.is_empty() {
                body["example"] = json!({"body_text_named_params": params});
            }
        } else {
            let n = crate::templates::required_variable_count(&self.body);
            if n > 0 {
                let values: Vec<String> = (1..=n).map(|i| format!("example{i}")).collect();
                body["example"] = json!({"body_text": [values]});
            }
        }
        out.push(body);
        if let Some(f) = &self.footer {
            out.push(json!({"type": "FOOTER", "text": f}));
        }
        if !self.buttons.is_empty() {
            let buttons: Vec<Value> = self
                .buttons
                .iter()
                .map(|b| {
                    let mut o = json!({"type": b.kind.as_upper()});
                    if !b.text.is_empty() {
                        o["text"] = json!(b.text);
                    }
                    if let Some(u) = &b.url {
                        o["url"] = json!(u);
                        if b.has_url_variable() {
                            o["example"] = json!([u.replace("{{1}}", "example")]);
                        }
                    }
                    if let Some(p) = &b.phone_number {
                        o["phone_number"] = json!(p);
                    }
                    if b.kind == ButtonKind::CopyCode
                        && let Some(e) = &b.example
                    {
                        o["example"] = json!(e);
                    }
                    if let Some(t) = &b.otp_type {
                        o["otp_type"] = json!(t.to_ascii_uppercase());
                    }
                    if let Some(f) = &b.flow {
                        f.write(&mut o);
                    }
                    o
                })
                .collect();
            out.push(json!({"type": "BUTTONS", "buttons": buttons}));
        }
        self.format.shape_components(self, out)
    }

    /// Reads a template back from its `components` (as [`Self::to_components`] writes
    /// them, or as the platform lists them); `body` is used when they hold no BODY.
    pub fn from_components(
        components: &Value,
        parameter_format: Option<&str>,
        body: &str,
    ) -> Result<Self, SpecError> {
        let mut spec = TemplateSpec {
            parameter_format: ParameterFormat::parse(parameter_format)?,
            body: body.to_owned(),
            ..Default::default()
        };
        let Some(list) = components.as_array() else {
            return Ok(spec);
        };
        for c in list {
            let kind = c
                .get("type")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_ascii_uppercase();
            match kind.as_str() {
                "HEADER" => spec.header = Some(parse_header(c)?),
                "BODY" => {
                    if let Some(t) = c.get("text").and_then(Value::as_str) {
                        spec.body = t.to_owned();
                    }
                }
                "FOOTER" => spec.footer = c.get("text").and_then(Value::as_str).map(str::to_owned),
                "BUTTONS" => spec.buttons = parse_buttons(c.get("buttons").unwrap_or(&json!([])))?,
                _ => {}
            }
        }
        spec.format = TemplateFormat::read(list)?;
        Ok(spec)
    }
}

/// A FLOW button's own fields and send-time parameter.
#[path = "template_spec_flow.rs"]
pub mod flow;

#[cfg(test)]
#[path = "template_spec_tests.rs"]
mod tests;
