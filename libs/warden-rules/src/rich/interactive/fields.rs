//! An `interactive` object as written, before its action is known to fit its kind.
//!
//! The platform's `action` is one object whose keys depend on the message's `type`, so it
//! is read as every key any kind uses, each optional, and then taken apart by the kind
//! ([`super::Action`]). Both readers go through it: a stored or scheduled body
//! ([`crate::rich::RichMessage::from_json`]) and send_interactive's parameters. Its serde
//! shape is the stored and sent JSON: changing a name or an order here changes both.
//! The structs keep the names of those they replaced, `Interactive` and `Action`, because
//! serde's errors name them ("expected struct Action") and callers see those errors; they
//! are exported as `InteractiveFields` and `ActionFields`.

use serde::{Deserialize, Serialize};

use super::cta_url::NAME as CTA_URL;
use super::flow::NAME as FLOW;
use super::{
    ButtonsAction, CallPermissionAction, CtaParameters, CtaUrlAction, FlowAction, FlowParameters,
    Header, InteractiveType, ListAction, LocationRequestAction, ReplyButton, Section, TextObject,
};
use crate::rich::{RichError, err};

/// The platform's `interactive` object as written (`InteractiveFields` outside this file).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Interactive {
    /// `button`, `list` or `cta_url`.
    #[serde(rename = "type")]
    pub kind: InteractiveType,
    /// Optional header.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub header: Option<Header>,
    /// The body text (required).
    pub body: TextObject,
    /// Optional footer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub footer: Option<TextObject>,
    /// Buttons, rows or the CTA.
    pub action: Action,
}

/// The `action` as written: every key of every kind, each optional (`ActionFields` outside
/// this file).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Action {
    /// Reply buttons (`button`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub buttons: Option<Vec<ReplyButton>>,
    /// The list's button label (`list`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub button: Option<String>,
    /// The list's sections (`list`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sections: Option<Vec<Section>>,
    /// `cta_url` or `flow`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The CTA's text and url (`cta_url`), or which flow opens where (`flow`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parameters: Option<Parameters>,
}

/// The action's `parameters`: one key, two kinds' shapes. Read by its keys (a flow's carry
/// `flow_message_version`), so a CTA's errors read as they always did.
#[derive(Debug, Clone, PartialEq)]
pub enum Parameters {
    /// `cta_url`.
    Cta(CtaParameters),
    /// `flow`.
    Flow(FlowParameters),
}

impl Serialize for Parameters {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Cta(p) => p.serialize(s),
            Self::Flow(p) => p.serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for Parameters {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let v = serde_json::Value::deserialize(d)?;
        if v.get("flow_message_version").is_some() {
            serde_json::from_value(v)
                .map(Self::Flow)
                .map_err(D::Error::custom)
        } else {
            serde_json::from_value(v)
                .map(Self::Cta)
                .map_err(D::Error::custom)
        }
    }
}

impl Action {
    /// After a kind took its own keys: refuses the first one left, named as
    /// send_interactive names it.
    pub(super) fn refuse_rest(&self) -> Result<(), RichError> {
        let left = [
            (self.buttons.is_some(), "buttons"),
            (self.sections.is_some(), "sections"),
            (self.button.is_some(), "button_label"),
            (
                matches!(self.parameters, Some(Parameters::Flow(_))),
                "flow_cta",
            ),
            (self.name.is_some() || self.parameters.is_some(), "url"),
        ];
        match left.into_iter().find(|(present, _)| *present) {
            Some((_, field)) => Err(err(
                field,
                "does not belong to this kind of interactive message",
            )),
            None => Ok(()),
        }
    }
}

// Each kind taken from the action as written and written back: beside the form it reads,
// so the kinds' own files never need the form.
impl ButtonsAction {
    pub(super) fn from_fields(mut f: Action) -> Result<Self, RichError> {
        // None given reads as none at all, which `validate` refuses by their count.
        let buttons = f.buttons.take().unwrap_or_default();
        f.refuse_rest()?;
        Ok(Self { buttons })
    }

    pub(super) fn to_fields(&self) -> Action {
        Action {
            buttons: Some(self.buttons.clone()),
            ..Action::default()
        }
    }
}

impl ListAction {
    pub(super) fn from_fields(mut f: Action) -> Result<Self, RichError> {
        let (button, sections) = (f.button.take(), f.sections.take());
        f.refuse_rest()?;
        let button = button.ok_or_else(|| err("button_label", "is required for a list"))?;
        // None given reads as none at all, which `validate` refuses by their count.
        let sections = sections.unwrap_or_default();
        Ok(Self { button, sections })
    }

    pub(super) fn to_fields(&self) -> Action {
        Action {
            button: Some(self.button.clone()),
            sections: Some(self.sections.clone()),
            ..Action::default()
        }
    }
}

impl CtaUrlAction {
    pub(super) fn from_fields(mut f: Action) -> Result<Self, RichError> {
        let name = f.name.take();
        let parameters = match f.parameters.take() {
            Some(Parameters::Cta(p)) => Some(p),
            // Left in place for `refuse_rest` to name.
            flow @ Some(Parameters::Flow(_)) => {
                f.parameters = flow;
                None
            }
            None => None,
        };
        f.refuse_rest()?;
        if name.as_deref() != Some(CTA_URL) {
            return Err(err("action.name", "must be \"cta_url\""));
        }
        let parameters =
            parameters.ok_or_else(|| err("url", "and `display_text` are required for cta_url"))?;
        Ok(Self { parameters })
    }

    pub(super) fn to_fields(&self) -> Action {
        Action {
            name: Some(CTA_URL.into()),
            parameters: Some(Parameters::Cta(self.parameters.clone())),
            ..Action::default()
        }
    }
}

impl FlowAction {
    pub(super) fn from_fields(mut f: Action) -> Result<Self, RichError> {
        let name = f.name.take();
        let parameters = match f.parameters.take() {
            Some(Parameters::Flow(p)) => Some(p),
            Some(Parameters::Cta(_)) => {
                return Err(err(
                    "url",
                    "does not belong to this kind of interactive message",
                ));
            }
            None => None,
        };
        f.refuse_rest()?;
        if name.as_deref() != Some(FLOW) {
            return Err(err("action.name", "must be \"flow\""));
        }
        let parameters = parameters.ok_or_else(|| {
            err(
                "flow_cta",
                "and `flow_id` or `flow_name` are required for a flow",
            )
        })?;
        Ok(Self { parameters })
    }

    pub(super) fn to_fields(&self) -> Action {
        Action {
            name: Some(FLOW.into()),
            parameters: Some(Parameters::Flow(self.parameters.clone())),
            ..Action::default()
        }
    }
}

/// A kind whose action is only its `name`: takes the name, refuses any other key and a
/// name other than `name`.
fn name_only(mut f: Action, name: &str) -> Result<(), RichError> {
    let given = f.name.take();
    f.refuse_rest()?;
    if given.as_deref() != Some(name) {
        return Err(err("action.name", format!("must be \"{name}\"")));
    }
    Ok(())
}

fn named(name: &str) -> Action {
    Action {
        name: Some(name.into()),
        ..Action::default()
    }
}

impl LocationRequestAction {
    pub(super) fn from_fields(f: Action) -> Result<Self, RichError> {
        name_only(f, Self::NAME).map(|()| Self)
    }

    pub(super) fn to_fields(self) -> Action {
        named(Self::NAME)
    }
}

impl CallPermissionAction {
    pub(super) fn from_fields(f: Action) -> Result<Self, RichError> {
        name_only(f, Self::NAME).map(|()| Self)
    }

    pub(super) fn to_fields(self) -> Action {
        named(Self::NAME)
    }
}
