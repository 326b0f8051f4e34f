//! Authentication templates: the platform writes the body ("<code> is your verification
//! code.", with an optional security line and expiry line); the business chooses how the
//! code is delivered (`otp_type`) and, for one-tap and zero-tap, which Android app receives
//! it (package name and signature hash). A send gives only the code.

use serde_json::{Map, Value, json};

use super::not_allowed;
use crate::kinds::TemplateCategory;
use crate::template_spec::{Button, ButtonKind, SpecError, TemplateSpec, err};

/// The body the platform gives every authentication template: one variable, the code.
pub const PRESET_BODY: &str = "{{1}} is your verification code.";
/// Longest code expiry (platform).
pub const MAX_CODE_EXPIRATION_MINUTES: u32 = 90;
/// Length of an app signature hash (platform).
pub const SIGNATURE_HASH_CHARS: usize = 11;
/// Longest Android package name (platform).
pub const MAX_PACKAGE_NAME_CHARS: usize = 224;
/// Longest code a send may give (platform).
pub const MAX_CODE_CHARS: usize = 15;

/// How the code reaches the user.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OtpType {
    /// A button copies the code.
    CopyCode,
    /// A button fills the code into the Android app.
    OneTap,
    /// The Android app receives the code without a tap.
    ZeroTap,
}

impl OtpType {
    /// `COPY_CODE`, `ONE_TAP`, `ZERO_TAP`.
    pub fn as_upper(self) -> &'static str {
        match self {
            Self::CopyCode => "COPY_CODE",
            Self::OneTap => "ONE_TAP",
            Self::ZeroTap => "ZERO_TAP",
        }
    }

    /// Reads the three names, any case.
    pub fn parse(s: &str) -> Result<Self, SpecError> {
        match s.trim().to_ascii_uppercase().as_str() {
            "COPY_CODE" => Ok(Self::CopyCode),
            "ONE_TAP" => Ok(Self::OneTap),
            "ZERO_TAP" => Ok(Self::ZeroTap),
            _ => Err(err(
                "otp_type",
                format!("must be COPY_CODE, ONE_TAP or ZERO_TAP, not {s:?}"),
            )),
        }
    }

    /// One-tap and zero-tap hand the code to an app, so they name it.
    pub fn needs_app(self) -> bool {
        self != Self::CopyCode
    }
}

/// An authentication template's settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Authentication {
    /// How the code reaches the user.
    pub otp_type: OtpType,
    /// "This code expires in N minutes." (1 to 90); none: no expiry line.
    pub code_expiration_minutes: Option<u32>,
    /// "For your security, do not share this code."
    pub add_security_recommendation: bool,
    /// ONE_TAP / ZERO_TAP: the Android app's package name.
    pub package_name: Option<String>,
    /// ONE_TAP / ZERO_TAP: the app's 11-character signing key hash.
    pub signature_hash: Option<String>,
}

/// Keys an OTP button carries on the platform beyond type, text and otp_type.
pub fn is_otp_key(key: &str) -> bool {
    matches!(
        key,
        "autofill_text"
            | "supported_apps"
            | "zero_tap_terms_accepted"
            | "package_name"
            | "signature_hash"
    )
}

/// An Android application id: two or more dot-separated parts, each a letter then
/// letters, digits or underscores.
pub fn is_package_name(s: &str) -> bool {
    let parts: Vec<&str> = s.split('.').collect();
    s.chars().count() <= MAX_PACKAGE_NAME_CHARS
        && parts.len() >= 2
        && parts.iter().all(|p| {
            p.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
                && p.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        })
}

/// An app signing key hash: 11 characters of the base64 alphabet.
pub fn is_signature_hash(s: &str) -> bool {
    s.chars().count() == SIGNATURE_HASH_CHARS
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '+' || c == '/')
}

impl Authentication {
    /// The whole template: the platform's body and one OTP button of this delivery type.
    pub fn into_spec(self) -> TemplateSpec {
        TemplateSpec {
            body: PRESET_BODY.to_owned(),
            buttons: vec![Button {
                kind: ButtonKind::Otp,
                text: String::new(),
                url: None,
                phone_number: None,
                example: None,
                otp_type: Some(self.otp_type.as_upper().to_owned()),
                flow: None,
            }],
            format: super::TemplateFormat::Authentication(self),
            ..Default::default()
        }
    }

    /// The platform's rules for an authentication template.
    pub fn validate(
        &self,
        spec: &TemplateSpec,
        category: TemplateCategory,
    ) -> Result<(), SpecError> {
        if category != TemplateCategory::Authentication {
            return Err(err(
                "category",
                format!(
                    "is {}, but otp_type makes an AUTHENTICATION template",
                    category.as_upper()
                ),
            ));
        }
        if spec.header.is_some() {
            return Err(not_allowed("header", "an AUTHENTICATION template"));
        }
        if spec.footer.is_some() {
            return Err(not_allowed(
                "footer",
                "an AUTHENTICATION template (code_expiration_minutes writes its footer)",
            ));
        }
        if let Some(m) = self.code_expiration_minutes
            && !(1..=MAX_CODE_EXPIRATION_MINUTES).contains(&m)
        {
            return Err(err(
                "code_expiration_minutes",
                format!("is {m}; it must be 1 to {MAX_CODE_EXPIRATION_MINUTES}"),
            ));
        }
        let app = [
            ("package_name", self.package_name.as_deref()),
            ("signature_hash", self.signature_hash.as_deref()),
        ];
        if self.otp_type.needs_app() {
            for (field, value) in app {
                if value.is_none_or(|v| v.trim().is_empty()) {
                    return Err(err(
                        field,
                        format!(
                            "is required for otp_type {}: the Android app that receives the code",
                            self.otp_type.as_upper()
                        ),
                    ));
                }
            }
            let package = self.package_name.as_deref().unwrap_or("");
            if !is_package_name(package) {
                return Err(err(
                    "package_name",
                    format!(
                        "must be an Android package name such as com.example.app (dot-separated parts of letters, digits and underscores, each starting with a letter; at most {MAX_PACKAGE_NAME_CHARS} characters), not {package:?}"
                    ),
                ));
            }
            let hash = self.signature_hash.as_deref().unwrap_or("");
            if !is_signature_hash(hash) {
                return Err(err(
                    "signature_hash",
                    format!(
                        "must be the app's signing key hash: exactly {SIGNATURE_HASH_CHARS} characters of A-Z, a-z, 0-9, + and /"
                    ),
                ));
            }
        } else if let Some((field, _)) = app.iter().find(|(_, v)| v.is_some()) {
            return Err(err(
                *field,
                "is only for otp_type ONE_TAP or ZERO_TAP (a COPY_CODE code goes to no app)",
            ));
        }
        if spec.buttons.len() != 1 || spec.buttons[0].kind != ButtonKind::Otp {
            return Err(err(
                "buttons",
                "are written by otp_type: an AUTHENTICATION template has exactly one OTP button",
            ));
        }
        Ok(())
    }

    /// The platform's create components: BODY (no text: the platform writes it), FOOTER
    /// with the expiry, BUTTONS with the one OTP button.
    pub fn components(&self, _spec: &TemplateSpec) -> Vec<Value> {
        let mut out = vec![json!({
            "type": "BODY",
            "add_security_recommendation": self.add_security_recommendation,
        })];
        if let Some(m) = self.code_expiration_minutes {
            out.push(json!({"type": "FOOTER", "code_expiration_minutes": m}));
        }
        let mut button = json!({"type": "OTP", "otp_type": self.otp_type.as_upper()});
        if let (Some(p), Some(h)) = (&self.package_name, &self.signature_hash) {
            button["supported_apps"] = json!([{"package_name": p, "signature_hash": h}]);
        }
        if self.otp_type == OtpType::ZeroTap {
            button["zero_tap_terms_accepted"] = json!(true);
        }
        out.push(json!({"type": "BUTTONS", "buttons": [button]}));
        out
    }

    /// Reads the settings back from components holding an OTP button with an otp_type.
    pub fn read(components: &[Value]) -> Option<Self> {
        let button = super::find(components, "BUTTONS")?
            .get("buttons")?
            .as_array()?
            .iter()
            .find(|b| b.get("type").and_then(Value::as_str) == Some("OTP"))?
            .as_object()?;
        let otp_type = OtpType::parse(button.get("otp_type")?.as_str()?).ok()?;
        let app = button
            .get("supported_apps")
            .and_then(Value::as_array)
            .and_then(|a| a.first())
            .and_then(Value::as_object)
            .unwrap_or(button);
        let text =
            |o: &Map<String, Value>, k: &str| o.get(k).and_then(Value::as_str).map(str::to_owned);
        Some(Authentication {
            otp_type,
            code_expiration_minutes: super::find(components, "FOOTER")
                .and_then(|f| f.get("code_expiration_minutes"))
                .and_then(Value::as_u64)
                .map(|m| m as u32),
            add_security_recommendation: super::find(components, "BODY")
                .and_then(|b| b.get("add_security_recommendation"))
                .and_then(Value::as_bool)
                .unwrap_or(false),
            package_name: text(app, "package_name"),
            signature_hash: text(app, "signature_hash"),
        })
    }
}
