//! `button`: up to three reply buttons.

use std::collections::HashSet;

use serde::{Deserialize, Serialize};

use crate::rich::{MAX_BUTTON_ID_CHARS, MAX_BUTTON_TITLE_CHARS, MAX_BUTTONS, RichError, err, text};
use crate::text::TextKind;

/// `{"id", "title"}` of a reply button.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Reply {
    /// Echoed in the customer's button reply.
    pub id: String,
    /// At most 20 characters.
    pub title: String,
}

/// `{"type": "reply", "reply": {...}}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReplyButton {
    /// Always `reply`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The button.
    pub reply: Reply,
}

/// The action of a `button` message: `{"buttons": [...]}`.
#[derive(Debug, Clone, PartialEq)]
pub struct ButtonsAction {
    /// 1 to 3 reply buttons, ids unique.
    pub buttons: Vec<ReplyButton>,
}

impl ButtonsAction {
    pub(super) fn validate(&self) -> Result<(), RichError> {
        let buttons = &self.buttons;
        if buttons.is_empty() || buttons.len() > MAX_BUTTONS {
            return Err(err(
                "buttons",
                format!(
                    "has {} buttons; between 1 and {MAX_BUTTONS} are allowed",
                    buttons.len()
                ),
            ));
        }
        let mut ids = HashSet::new();
        for (i, b) in buttons.iter().enumerate() {
            if b.kind != "reply" {
                return Err(err(format!("buttons[{i}].type"), "must be \"reply\""));
            }
            let id = &b.reply.id;
            text(
                &format!("buttons[{i}].id"),
                id,
                MAX_BUTTON_ID_CHARS,
                TextKind::Plain,
            )?;
            text(
                &format!("buttons[{i}].title"),
                &b.reply.title,
                MAX_BUTTON_TITLE_CHARS,
                TextKind::Plain,
            )?;
            if !ids.insert(id.as_str()) {
                return Err(err(
                    format!("buttons[{i}].id"),
                    format!("repeats the id {id:?}; button ids must be unique"),
                ));
            }
        }
        Ok(())
    }
}
