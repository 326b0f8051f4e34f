//! The sim's template registry and the template set it starts with.

use serde::Deserialize;
use serde_json::Value;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use warden_platform::message::{Component, Parameter, TemplateMessage};
use warden_platform::template::{PlaceholderError, TemplateComponent, TemplateInfo, placeholders};

/// The repo's default set, used when the file is not where the working directory
/// suggests (e.g. the binary runs from elsewhere).
pub const EMBEDDED_TEMPLATES: &str = include_str!("../../../templates/sim-templates.json");

/// Carousel, limited-time offer and authentication templates.
pub mod formats;

pub const CATEGORIES: [&str; 3] = ["MARKETING", "UTILITY", "AUTHENTICATION"];

#[derive(Debug, Clone)]
pub struct Template {
    pub id: String,
    pub name: String,
    pub language: String,
    /// MARKETING, UTILITY or AUTHENTICATION.
    pub category: String,
    /// APPROVED, PENDING, REJECTED, PAUSED, DISABLED, ...
    pub status: String,
    pub body: String,
    /// Distinct `{{n}}` in the body: the body parameters a send must carry.
    pub params: usize,
    pub reason: Option<String>,
    /// HEADER, FOOTER and BUTTONS as created (the BODY is `body`).
    pub components: Vec<TemplateComponent>,
    /// A named template's body parameter names (`parameter_format: NAMED`); None: positional.
    pub named: Option<Vec<String>>,
}

impl Template {
    /// The category as status webhooks' pricing writes it.
    pub fn pricing_category(&self) -> &'static str {
        match self.category.as_str() {
            "MARKETING" => "marketing",
            "AUTHENTICATION" => "authentication",
            _ => "utility",
        }
    }

    pub fn info(&self) -> TemplateInfo {
        TemplateInfo {
            name: self.name.clone(),
            language: self.language.clone(),
            status: self.status.clone(),
            category: self.category.clone(),
            id: self.id.clone(),
            // In the platform's order: header, body, footer, buttons.
            components: self
                .components
                .iter()
                .filter(|c| c.kind.eq_ignore_ascii_case("header"))
                .cloned()
                .chain(std::iter::once(TemplateComponent {
                    kind: "BODY".to_owned(),
                    format: None,
                    text: Some(self.body.clone()),
                    example: None,
                    buttons: None,
                    extra: Default::default(),
                }))
                .chain(
                    self.components
                        .iter()
                        .filter(|c| !c.kind.eq_ignore_ascii_case("header"))
                        .cloned(),
                )
                .collect(),
            rejected_reason: Some(self.reason.clone().unwrap_or_else(|| "NONE".to_owned())),
            parameter_format: Some(
                if self.named.is_some() {
                    "NAMED"
                } else {
                    "POSITIONAL"
                }
                .to_owned(),
            ),
        }
    }
}

/// Templates keyed by (name, language).
#[derive(Debug, Default)]
pub struct Registry {
    by_key: HashMap<(String, String), Template>,
}

impl Registry {
    pub fn get(&self, name: &str, language: &str) -> Option<&Template> {
        // Keyed by owned strings; the lookup allocation is cheap next to JSON parsing.
        self.by_key.get(&(name.to_owned(), language.to_owned()))
    }

    pub fn get_mut(&mut self, name: &str, language: &str) -> Option<&mut Template> {
        self.by_key.get_mut(&(name.to_owned(), language.to_owned()))
    }

    pub fn contains(&self, name: &str, language: &str) -> bool {
        self.get(name, language).is_some()
    }

    pub fn insert(&mut self, t: Template) {
        self.by_key.insert((t.name.clone(), t.language.clone()), t);
    }

    /// All templates, sorted by name then language (stable paging).
    pub fn sorted(&self) -> Vec<&Template> {
        let mut all: Vec<&Template> = self.by_key.values().collect();
        all.sort_by(|a, b| (&a.name, &a.language).cmp(&(&b.name, &b.language)));
        all
    }

    pub fn len(&self) -> usize {
        self.by_key.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_key.is_empty()
    }
}

#[derive(Debug, thiserror::Error)]
pub enum TemplateFileError {
    #[error("cannot read SIM_TEMPLATES file {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("SIM_TEMPLATES file {origin}: {reason}")]
    Invalid {
        origin: String,
        reason: TemplateSetError,
    },
}

/// Why a template file's text is not a usable initial set.
#[derive(Debug, thiserror::Error)]
pub enum TemplateSetError {
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    #[error("template {name}/{language}: unknown category {category:?}")]
    UnknownCategory {
        name: String,
        language: String,
        category: String,
    },
    #[error("template {name:?}: {problem}")]
    Name { name: String, problem: &'static str },
    #[error("template {name}: empty language")]
    EmptyLanguage { name: String },
    #[error("template {name}/{language}: {error}")]
    Placeholders {
        name: String,
        language: String,
        error: PlaceholderError,
    },
    #[error("template {name}/{language} listed twice")]
    Duplicate { name: String, language: String },
}

/// A HEADER, FOOTER or BUTTONS component the platform refuses at create time.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ComponentError {
    #[error("HEADER format {format:?} is not supported")]
    HeaderFormat { format: String },
    #[error("HEADER text is required and at most 60 characters")]
    HeaderText,
    #[error("FOOTER text is required and at most 60 characters")]
    FooterText,
    #[error("BUTTONS needs buttons")]
    NoButtons,
    #[error("too many buttons: at most 10, of which 2 URL and 1 PHONE_NUMBER")]
    TooManyButtons,
    #[error("component type {kind:?} is not supported")]
    UnknownType { kind: String },
    #[error("{0}")]
    Button(String),
}

#[derive(Deserialize)]
#[serde(untagged)]
enum FileShape {
    Wrapped { templates: Vec<FileTemplate> },
    Bare(Vec<FileTemplate>),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileTemplate {
    name: String,
    language: String,
    category: String,
    #[serde(alias = "body_text")]
    body: String,
    #[serde(default = "approved")]
    status: String,
    #[serde(default)]
    id: Option<String>,
}

fn approved() -> String {
    "APPROVED".to_owned()
}

/// One template of the initial set, checked.
#[derive(Debug, Clone)]
pub struct Seed {
    pub id: Option<String>,
    pub name: String,
    pub language: String,
    pub category: String,
    pub status: String,
    pub body: String,
    pub params: usize,
}

/// Reads the initial set: the given file (an error when it is missing), else the
/// repo's default path when it exists, else the embedded copy.
pub fn load_initial(explicit: Option<&Path>) -> Result<(Vec<Seed>, String), TemplateFileError> {
    let (text, origin) = match explicit {
        Some(path) => (
            std::fs::read_to_string(path).map_err(|source| TemplateFileError::Read {
                path: path.to_owned(),
                source,
            })?,
            path.display().to_string(),
        ),
        None => {
            let default = Path::new(crate::config::DEFAULT_TEMPLATES_PATH);
            match std::fs::read_to_string(default) {
                Ok(text) => (text, default.display().to_string()),
                Err(_) => (EMBEDDED_TEMPLATES.to_owned(), "built-in default".to_owned()),
            }
        }
    };
    let seeds = parse_templates(&text).map_err(|reason| TemplateFileError::Invalid {
        origin: origin.clone(),
        reason,
    })?;
    Ok((seeds, origin))
}

/// Parses and checks a template file's text.
pub fn parse_templates(text: &str) -> Result<Vec<Seed>, TemplateSetError> {
    let shape: FileShape = serde_json::from_str(text)?;
    let list = match shape {
        FileShape::Wrapped { templates } => templates,
        FileShape::Bare(list) => list,
    };
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::with_capacity(list.len());
    for t in list {
        let category = t.category.to_ascii_uppercase();
        if !CATEGORIES.contains(&category.as_str()) {
            return Err(TemplateSetError::UnknownCategory {
                name: t.name,
                language: t.language,
                category: t.category,
            });
        }
        if let Some(problem) = name_problem(&t.name) {
            return Err(TemplateSetError::Name {
                name: t.name,
                problem,
            });
        }
        if t.language.trim().is_empty() {
            return Err(TemplateSetError::EmptyLanguage { name: t.name });
        }
        let params = placeholders(&t.body)
            .map_err(|error| TemplateSetError::Placeholders {
                name: t.name.clone(),
                language: t.language.clone(),
                error,
            })?
            .len();
        if !seen.insert((t.name.clone(), t.language.clone())) {
            return Err(TemplateSetError::Duplicate {
                name: t.name,
                language: t.language,
            });
        }
        out.push(Seed {
            id: t.id,
            name: t.name,
            language: t.language,
            category,
            status: t.status.to_ascii_uppercase(),
            body: t.body,
            params,
        });
    }
    Ok(out)
}

/// The platform's naming rule: lower case letters, digits and `_`, at most 512.
pub fn name_problem(name: &str) -> Option<&'static str> {
    if name.is_empty() {
        Some("name is empty")
    } else if name.len() > 512 {
        Some("name is longer than 512 characters")
    } else if !name
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
    {
        Some("name may only hold lower case letters, digits and underscores")
    } else {
        None
    }
}

/// `{{name}}` parameters of a named template's text, distinct, in first-use order.
pub fn named_params(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("{{") {
        let after = &rest[start + 2..];
        let Some(end) = after.find("}}") else { break };
        let name = after[..end].trim();
        if !name.is_empty() && !out.iter().any(|n| n == name) {
            out.push(name.to_owned());
        }
        rest = &after[end + 2..];
    }
    out
}

/// The platform's create-time limits on HEADER, FOOTER and BUTTONS (the sim's own reading
/// of them, independent of Warden's validators).
pub fn check_components(components: &[TemplateComponent]) -> Result<(), ComponentError> {
    for c in components {
        match c.kind.to_ascii_uppercase().as_str() {
            "HEADER" => {
                let format = c.format.as_deref().unwrap_or("").to_ascii_uppercase();
                if !["TEXT", "IMAGE", "VIDEO", "DOCUMENT", "LOCATION"].contains(&format.as_str()) {
                    return Err(ComponentError::HeaderFormat { format });
                }
                if format == "TEXT" && c.text.as_deref().is_none_or(|t| t.chars().count() > 60) {
                    return Err(ComponentError::HeaderText);
                }
            }
            "FOOTER" if c.extra.contains_key("code_expiration_minutes") => {}
            "FOOTER" => {
                if c.text.as_deref().is_none_or(|t| t.chars().count() > 60) {
                    return Err(ComponentError::FooterText);
                }
            }
            "BUTTONS" => {
                let buttons = c
                    .buttons
                    .as_ref()
                    .and_then(Value::as_array)
                    .ok_or(ComponentError::NoButtons)?;
                let count = |t: &str| {
                    buttons
                        .iter()
                        .filter(|b| b["type"].as_str() == Some(t))
                        .count()
                };
                if buttons.len() > 10 || count("URL") > 2 || count("PHONE_NUMBER") > 1 {
                    return Err(ComponentError::TooManyButtons);
                }
                if count("FLOW") > 1 {
                    return Err(ComponentError::Button("at most 1 FLOW button".into()));
                }
                for (i, b) in buttons.iter().enumerate() {
                    if b["type"].as_str() == Some("FLOW") {
                        crate::flow_checks::check_flow_button(i, b)
                            .map_err(ComponentError::Button)?;
                    }
                }
            }
            // Checked by `formats::check_create`.
            "CAROUSEL" | "LIMITED_TIME_OFFER" => {}
            other => {
                return Err(ComponentError::UnknownType {
                    kind: other.to_string(),
                });
            }
        }
    }
    Ok(())
}

fn header_of(components: &[Component]) -> Option<&Component> {
    components
        .iter()
        .find(|c| c.kind.eq_ignore_ascii_case("header"))
}

fn button_at(components: &[Component], index: usize) -> Option<&Component> {
    components.iter().find(|c| {
        c.kind.eq_ignore_ascii_case("button")
            && c.index.as_deref().and_then(|i| i.trim().parse().ok()) == Some(index)
    })
}

/// A parameter of type `want` carrying its value (`text`, or the object of that name).
fn param_is(p: &Parameter, want: &str) -> bool {
    p.kind.eq_ignore_ascii_case(want)
        && match want {
            "text" => p.text.is_some(),
            _ => p.other.contains_key(want),
        }
}

const COUNT: i64 = 132000;
const FORMAT: i64 = 132012;
const VALUE: i64 = 131009;

impl Template {
    /// Checks a send's parameters against the template as created, as the platform does:
    /// 132000 when a component's parameter count is wrong, 132012 when a parameter has the
    /// wrong type (text where an image is expected, a positional value for a named
    /// template), 131009 when a media parameter has no link or id.
    pub fn check_send(&self, tm: &TemplateMessage) -> Result<(), (i64, String)> {
        let body = tm.body_parameters();
        if body.len() != self.params {
            return Err((
                COUNT,
                format!(
                    "body: number of localizable_params ({}) does not match the expected number of params ({})",
                    body.len(),
                    self.params
                ),
            ));
        }
        if let Some(names) = &self.named {
            for p in body {
                match p.parameter_name.as_deref() {
                    Some(n) if names.iter().any(|m| m == n) => {}
                    _ => {
                        return Err((
                            FORMAT,
                            format!(
                                "body: parameter_name must be one of {names:?} for a named template"
                            ),
                        ));
                    }
                }
            }
        }
        let header = self
            .components
            .iter()
            .find(|c| c.kind.eq_ignore_ascii_case("HEADER"));
        let given = header_of(&tm.components);
        match header {
            None if given.is_some() => {
                return Err((
                    COUNT,
                    "header: the template has no header parameters".into(),
                ));
            }
            None => {}
            Some(h) => {
                let format = h.format.as_deref().unwrap_or("TEXT").to_ascii_lowercase();
                let wants = format != "text" || h.text.as_deref().is_some_and(|t| t.contains("{{"));
                let params = given.map(|c| c.parameters.as_slice()).unwrap_or(&[]);
                if params.len() != usize::from(wants) {
                    return Err((
                        COUNT,
                        format!(
                            "header: number of parameters ({}) does not match the expected number ({})",
                            params.len(),
                            usize::from(wants)
                        ),
                    ));
                }
                if let Some(p) = params.first() {
                    if !param_is(p, &format) {
                        return Err((
                            FORMAT,
                            format!("header: expected a {format} parameter, got {:?}", p.kind),
                        ));
                    }
                    if ["image", "video", "document"].contains(&format.as_str()) {
                        let media = &p.other[&format];
                        let has = |k: &str| {
                            media
                                .get(k)
                                .and_then(Value::as_str)
                                .is_some_and(|s| !s.is_empty())
                        };
                        if !has("link") && !has("id") {
                            return Err((
                                VALUE,
                                format!("header: the {format} needs a link or an id"),
                            ));
                        }
                    }
                }
            }
        }
        let buttons: Vec<Value> = self
            .components
            .iter()
            .find(|c| c.kind.eq_ignore_ascii_case("BUTTONS"))
            .and_then(|c| c.buttons.as_ref())
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        for (i, b) in buttons.iter().enumerate() {
            let kind = b["type"].as_str().unwrap_or("").to_ascii_uppercase();
            let want = match kind.as_str() {
                "URL" if b["url"].as_str().is_some_and(|u| u.contains("{{")) => Some("text"),
                "OTP" => Some("text"),
                "COPY_CODE" => Some("coupon_code"),
                _ => None,
            };
            let given = button_at(&tm.components, i);
            // A FLOW button's parameter is optional; given, it is one `action`.
            if kind == "FLOW"
                && let Some(c) = given
                && !matches!(c.parameters.as_slice(), [p] if param_is(p, "action"))
            {
                return Err((
                    VALUE,
                    format!("button {i}: a FLOW button takes one action parameter"),
                ));
            }
            match (want, given) {
                (Some(want), Some(c)) => match c.parameters.as_slice() {
                    [p] if param_is(p, want) => {}
                    [p] => {
                        return Err((
                            FORMAT,
                            format!("button {i}: expected a {want} parameter, got {:?}", p.kind),
                        ));
                    }
                    ps => {
                        return Err((
                            COUNT,
                            format!("button {i}: expected 1 parameter, got {}", ps.len()),
                        ));
                    }
                },
                (Some(want), None) => {
                    return Err((COUNT, format!("button {i}: a {want} parameter is required")));
                }
                (None, _) => {}
            }
        }
        let now_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as i64);
        formats::check_send(self, tm, now_ms)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedded_set_is_valid_and_covers_every_category() {
        let seeds = parse_templates(EMBEDDED_TEMPLATES).unwrap();
        for cat in CATEGORIES {
            assert!(
                seeds.iter().any(|s| s.category == cat
                    && s.status == "APPROVED"
                    && s.body.contains("{{1}}")),
                "no approved {cat} template with {{{{1}}}}"
            );
        }
    }

    #[test]
    fn rejects_bad_files() {
        assert!(parse_templates("{").is_err());
        assert!(
            parse_templates(r#"[{"name":"a","language":"en","category":"PROMO","body":"x"}]"#)
                .is_err()
        );
        assert!(
            parse_templates(r#"[{"name":"A b","language":"en","category":"UTILITY","body":"x"}]"#)
                .is_err()
        );
        assert!(
            parse_templates(
                r#"[{"name":"a","language":"en","category":"utility","body":"{{2}}"}]"#
            )
            .is_err()
        );
        let ok = parse_templates(
            r#"[{"name":"a","language":"en","category":"utility","body_text":"{{1}} {{2}}"}]"#,
        )
        .unwrap();
        assert_eq!(ok[0].params, 2);
        assert_eq!(ok[0].category, "UTILITY");
        assert_eq!(ok[0].status, "APPROVED");
    }
}
