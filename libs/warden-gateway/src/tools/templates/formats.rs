//! create_template's formats: a carousel (`cards`), a limited-time offer
//! (`limited_time_offer`) and an authentication template (`otp_type` and its settings).
//! The rules are `warden_rules::template_spec::formats`; this reads the parameters into
//! them.

use schemars::JsonSchema;
use serde::Deserialize;
use warden_rules::template_spec::formats::authentication::{Authentication, OtpType, PRESET_BODY};
use warden_rules::template_spec::formats::carousel::parse_cards;
use warden_rules::template_spec::formats::offer::parse_offer;
use warden_rules::template_spec::{SpecError, TemplateFormat, TemplateSpec};

use super::CreateTemplateIn;
use crate::error::{ToolError, ToolResult};
use crate::input::fields::{Flag, Json, Text, Whole, opt_string};

/// The format parameters of create_template (each optional; at most one format).
#[derive(Deserialize, JsonSchema)]
pub struct FormatsIn {
    /// A carousel (MARKETING only; the template's body_text is required and it has no header, footer or buttons of its own): JSON array (as a string) of 2 to 10 cards, each {"header": {"format": "IMAGE"|"VIDEO", "example": "<uploaded media handle or https URL>"}, "body": "optional text, at most 160 characters, may use {{1}}", "buttons": [1 or 2 of {"type": "QUICK_REPLY", "text"} or {"type": "URL", "text", "url"}]}. Every card has the same header format and the same button types in the same order.
    pub cards: Option<Json>,
    /// A limited-time offer (MARKETING only, no footer, body at most 600 characters, header IMAGE or VIDEO if any): JSON object (as a string) {"text": "offer line, 1 to 16 characters", "has_expiration": true|false}. Needs a URL button; with has_expiration also a COPY_CODE button, first.
    pub limited_time_offer: Option<Json>,
    /// Makes an AUTHENTICATION template (leave body_text, header, footer and buttons out: the platform writes "<code> is your verification code."): "COPY_CODE", "ONE_TAP" or "ZERO_TAP".
    pub otp_type: Option<Text>,
    /// AUTHENTICATION: "This code expires in N minutes." with N from 1 to 90; leave out for no expiry line.
    #[schemars(range(min = 1, max = 90))]
    pub code_expiration_minutes: Option<Whole<u32>>,
    /// AUTHENTICATION: add "For your security, do not share this code."; default false.
    #[schemars(extend("default" = false))]
    pub add_security_recommendation: Option<Flag>,
    /// AUTHENTICATION ONE_TAP / ZERO_TAP (required there): the Android app's package name, e.g. "com.example.app".
    pub package_name: Option<Text>,
    /// AUTHENTICATION ONE_TAP / ZERO_TAP (required there): the app's 11-character signing key hash, e.g. "K8a/AINcGX7".
    pub signature_hash: Option<Text>,
}

/// The body to create: `body_text`, or the platform's own for an authentication template
/// (which takes none).
pub(super) fn body_text(a: &CreateTemplateIn) -> ToolResult<String> {
    match (&a.body_text, a.formats.otp_type.is_some()) {
        (Some(_), true) => Err(ToolError::invalid(
            "The parameter `body_text` is not taken with otp_type: an AUTHENTICATION template's body is written by the platform (\"<code> is your verification code.\").",
            "Leave `body_text` out; add_security_recommendation and code_expiration_minutes add the platform's optional lines.",
        )),
        (None, true) => Ok(PRESET_BODY.to_owned()),
        (Some(b), false) => Ok(b.0.clone()),
        (None, false) => Err(ToolError::invalid(
            "The parameter `body_text` is required and must not be empty.",
            "Pass `body_text`: the template's text with {{1}}-style placeholders (only an AUTHENTICATION template with otp_type goes without it).",
        )),
    }
}

/// `spec` made a carousel, an offer or an authentication template, as the parameters
/// say (`buttons_given`: the caller passed `buttons`).
pub(super) fn with_format(
    f: &FormatsIn,
    mut spec: TemplateSpec,
    buttons_given: bool,
) -> Result<TemplateSpec, SpecError> {
    let auth_given = f.otp_type.is_some()
        || f.code_expiration_minutes.is_some()
        || f.add_security_recommendation.is_some()
        || f.package_name.is_some()
        || f.signature_hash.is_some();
    let given = [
        ("cards", f.cards.is_some()),
        ("limited_time_offer", f.limited_time_offer.is_some()),
        ("otp_type", auth_given),
    ];
    let mut named = given.iter().filter(|(_, g)| *g).map(|(n, _)| *n);
    if let (Some(first), Some(second)) = (named.next(), named.next()) {
        return Err(SpecError {
            field: second.to_owned(),
            problem: format!("cannot be combined with {first}: a template has one format"),
        });
    }
    if let Some(Json(cards)) = &f.cards {
        spec.format = TemplateFormat::Carousel(parse_cards(cards)?);
    } else if let Some(Json(offer)) = &f.limited_time_offer {
        spec.format = TemplateFormat::LimitedTimeOffer(parse_offer(offer)?);
    } else if auth_given {
        let otp_type = OtpType::parse(opt_string(&f.otp_type).as_deref().ok_or_else(|| SpecError {
            field: "otp_type".into(),
            problem: "is required with code_expiration_minutes, add_security_recommendation, package_name or signature_hash: COPY_CODE, ONE_TAP or ZERO_TAP".into(),
        })?)?;
        if buttons_given {
            return Err(SpecError {
                field: "buttons".into(),
                problem: "are written by otp_type in an AUTHENTICATION template; leave them out"
                    .into(),
            });
        }
        let minutes = f
            .code_expiration_minutes
            .as_ref()
            .map(|m| u32::try_from(m.get()).unwrap_or(0));
        let mut auth = Authentication {
            otp_type,
            code_expiration_minutes: minutes,
            add_security_recommendation: f.add_security_recommendation.is_some_and(|b| b.0),
            package_name: opt_string(&f.package_name).map(|s| s.trim().to_owned()),
            signature_hash: opt_string(&f.signature_hash).map(|s| s.trim().to_owned()),
        }
        .into_spec();
        auth.header = spec.header;
        auth.footer = spec.footer;
        auth.parameter_format = spec.parameter_format;
        spec = auth;
    }
    Ok(spec)
}
