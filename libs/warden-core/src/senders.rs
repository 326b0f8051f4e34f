//! Which number: the deployment's senders (docs/configuration.md, "Several numbers") and
//! what belongs to what. The care window and the conversation are a sender's; consent and
//! frequency caps its business's; the messaging limit its portfolio's. Rows carry the
//! stored keys of [`warden_settings::Senders::key_of`].

use warden_settings::{Sender, Senders, StoreKeys};

use crate::{Core, CoreError};

/// A sender as a read names it: the stored key of its rows and the id shown.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SenderRef {
    pub key: String,
    pub id: String,
}

/// SQL: the message row `m` (a table alias) is the sender's whose stored key is the SQL
/// expression `key` (a column). The default sender's messages have no `message_senders` row.
pub fn message_of_sender(m: &str, key: &str) -> String {
    format!(
        "(CASE WHEN {key} = 'default' \
           THEN NOT EXISTS (SELECT 1 FROM message_senders ms WHERE ms.message_id = {m}.id) \
           ELSE EXISTS (SELECT 1 FROM message_senders ms WHERE ms.message_id = {m}.id \
                        AND ms.sender_id = {key}) END)"
    )
}

/// SQL: the message row `m` (a table alias) is of a sender whose stored key is in the
/// text array `keys` (a SQL expression, e.g. a bind parameter).
pub fn message_of_senders(m: &str, keys: &str) -> String {
    format!(
        "(CASE WHEN EXISTS (SELECT 1 FROM message_senders ms WHERE ms.message_id = {m}.id) \
           THEN EXISTS (SELECT 1 FROM message_senders ms WHERE ms.message_id = {m}.id \
                        AND ms.sender_id = ANY({keys})) \
           ELSE 'default' = ANY({keys}) END)"
    )
}

/// The answer to a `from` that names no sender: every id to choose from.
pub fn unknown_sender(given: &str, senders: &Senders) -> String {
    format!(
        "from: `{given}` is not a sender of this deployment; use one of: {} (an id or its phone_number_id)",
        senders.ids().join(", ")
    )
}

pub use warden_settings::is_stored_default as is_default_key;

impl Core {
    /// The deployment's senders (one, `default`, without a senders file).
    pub fn senders(&self) -> &Senders {
        &self.inner.senders
    }

    /// The sender `from` names (an id, a phone number id, or the stored key of its rows);
    /// when `None`, the default sender, or for a caller limited to other numbers its first
    /// own ([`crate::reach`]).
    pub fn sender(&self, from: Option<&str>) -> Result<&Sender, CoreError> {
        match from {
            None => self.default_in_reach(),
            Some(given) => self
                .senders()
                .get(given)
                .or_else(|| self.senders().by_key(given))
                .ok_or_else(|| CoreError::InvalidArgument(unknown_sender(given, self.senders()))),
        }
    }

    /// The sender `from` names, as reads name it (see [`Core::sender`]).
    pub fn sender_ref(&self, from: Option<&str>) -> Result<SenderRef, CoreError> {
        let sender = self.sender(from)?;
        Ok(SenderRef {
            key: self.senders().key_of(sender).sender,
            id: sender.id.clone(),
        })
    }

    /// The stored keys of the sender `from` names (see [`Core::sender`]).
    pub fn sender_keys(&self, from: Option<&str>) -> Result<StoreKeys, CoreError> {
        Ok(self.senders().key_of(self.sender(from)?))
    }

    /// The id shown for rows stored under `key`.
    pub fn sender_id_of_key<'a>(&'a self, key: &'a str) -> &'a str {
        self.senders().id_of_key(key)
    }
}

impl Core {
    /// The stored key of the sender a message was sent from or to; `NotFound` when it is
    /// outside this view's reach.
    pub async fn message_sender(&self, message_id: uuid::Uuid) -> Result<String, CoreError> {
        let mut conn = self.pg().get().await?;
        self.admit_message(&mut conn, message_id).await
    }
}
