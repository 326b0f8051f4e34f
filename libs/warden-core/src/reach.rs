//! What a caller may reach. One deployment may serve several businesses; an agent limited
//! to some senders (`warden-admin agents create NAME --senders a1`) reaches only what
//! belongs to them: their messages, conversations, campaigns and customers' media. Every
//! resource a tool names by id is read through [`Core::admit`], the one check: a resource
//! of another number answers exactly as a resource that does not exist (`NotFound`), so an
//! id of another business is never confirmed to exist, and nothing is changed or sent.
//!
//! Reads that name no sender (the inbox, the conversation list) read the senders in reach
//! ([`Reach::keys`]): for an unlimited caller every number, for a limited one its own. A
//! call about one number that names none (a send, a customer's context, spend) is about
//! the default sender when it is in reach, else the caller's first own number.

use std::sync::Arc;

use crate::{Core, CoreError};

/// The stored sender keys a caller may reach; `None`: every sender.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Reach(Option<Arc<[String]>>);

impl Reach {
    /// Every sender (stdio, operators, the scheduler, the webhook).
    pub fn all() -> Reach {
        Reach(None)
    }

    /// Only the senders stored under these keys.
    pub fn only(keys: impl IntoIterator<Item = String>) -> Reach {
        Reach(Some(keys.into_iter().collect()))
    }

    /// Whether rows stored under sender key `key` are in reach.
    pub fn covers(&self, key: &str) -> bool {
        self.0
            .as_deref()
            .is_none_or(|keys| keys.iter().any(|k| k == key))
    }

    /// Whether every key is in reach (a campaign spread over several numbers is reached
    /// only when all of them are).
    pub fn covers_all<'a>(&self, keys: impl IntoIterator<Item = &'a str>) -> bool {
        keys.into_iter().all(|k| self.covers(k))
    }

    /// The keys in reach; `None` when every sender is.
    pub fn keys(&self) -> Option<&[String]> {
        self.0.as_deref()
    }

    pub fn is_limited(&self) -> bool {
        self.0.is_some()
    }
}

impl Core {
    /// The same core limited to `reach` (a cheap view sharing every connection).
    pub fn within(&self, reach: Reach) -> Core {
        Core {
            inner: Arc::clone(&self.inner),
            actor: self.actor,
            reach,
        }
    }

    /// What this view may reach.
    pub fn reach(&self) -> &Reach {
        &self.reach
    }

    /// The reach of a caller allowed the senders with these ids (`None`: all). An id this
    /// deployment no longer has reaches nothing.
    pub fn reach_of_ids(&self, ids: Option<&[String]>) -> Reach {
        match ids {
            None => Reach::all(),
            Some(ids) => Reach::only(
                ids.iter()
                    .filter_map(|id| self.senders().by_id(id))
                    .map(|s| self.senders().sender_key(s).to_string()),
            ),
        }
    }

    /// The one check of every resource read by id: `Ok` when the resource stored under
    /// `keys` is in this view's reach, else the `NotFound` a missing `what` answers
    /// (`what`: "message 0192…", "campaign 0192…").
    pub fn admit<'a>(
        &self,
        what: impl std::fmt::Display,
        keys: impl IntoIterator<Item = &'a str>,
    ) -> Result<(), CoreError> {
        if self.reach.covers_all(keys) {
            Ok(())
        } else {
            Err(self.outside(what))
        }
    }

    /// The answer to a resource outside the reach: the one a missing resource gets.
    fn outside(&self, what: impl std::fmt::Display) -> CoreError {
        tracing::info!(actor = self.actor, resource = %what, "read outside the caller's senders answered as not found");
        CoreError::NotFound(format!("there is no {what}"))
    }

    /// [`Core::admit`] for message `id` (ours or a customer's): its number must be in
    /// reach. Returns the stored key of that number (one indexed read).
    pub async fn admit_message(
        &self,
        conn: &mut diesel_async::AsyncPgConnection,
        id: uuid::Uuid,
    ) -> Result<String, CoreError> {
        let key = crate::customers::consent::sender_of_message(conn, id).await?;
        self.admit(format_args!("message with id {id}"), [key.as_str()])?;
        Ok(key)
    }

    /// [`Core::admit`] for a customer's media `media_id` (get_media): a limited caller
    /// reaches it only when a customer's message to one of its numbers carries it. An
    /// unlimited caller is not asked (the platform answers for media it does not have).
    pub async fn admit_media(&self, media_id: &str) -> Result<(), CoreError> {
        let Some(keys) = self.reach.keys() else {
            return Ok(());
        };
        use diesel::sql_types::{Array, Bool, Text};
        #[derive(diesel::QueryableByName)]
        struct Found {
            #[diesel(sql_type = Bool)]
            found: bool,
        }
        let mut conn = self.pg().get().await?;
        // The default sender's messages have no message_senders row.
        let found: Found = diesel_async::RunQueryDsl::get_result(
            diesel::sql_query(format!(
                "SELECT EXISTS (SELECT 1 FROM messages m \
                  WHERE m.direction = 'inbound' \
                    AND m.content -> (m.content ->> 'type') ->> 'id' = $1 AND {}) AS found",
                crate::senders::message_of_senders("m", "$2")
            ))
            .bind::<Text, _>(media_id)
            .bind::<Array<Text>, _>(keys),
            &mut conn,
        )
        .await?;
        if found.found {
            Ok(())
        } else {
            Err(self.outside(format_args!("media {media_id}")))
        }
    }

    /// Whether the customer `phone` (canonical digits) is known to this view: always for an
    /// unlimited caller; for a limited one only when it has a conversation with one of the
    /// numbers in reach. A customer row is the deployment's (a phone number is nobody's),
    /// so what it holds of another business (when they last wrote, tags, engagement) is
    /// shown only to callers it is known to.
    pub async fn customer_in_reach(
        &self,
        conn: &mut diesel_async::AsyncPgConnection,
        phone: &str,
    ) -> Result<bool, CoreError> {
        use diesel::prelude::*;
        use diesel_async::RunQueryDsl;
        use warden_store::schema::conversations;
        let Some(keys) = self.reach.keys() else {
            return Ok(true);
        };
        let known: bool = diesel::select(diesel::dsl::exists(
            conversations::table
                .filter(conversations::customer_phone.eq(phone))
                .filter(conversations::sender_id.eq_any(keys.to_vec())),
        ))
        .get_result(conn)
        .await?;
        Ok(known)
    }

    /// The sender keys this view reads when a read names none: the senders in reach, in
    /// the order of the senders file.
    pub fn keys_in_reach(&self) -> Vec<String> {
        self.senders()
            .all()
            .iter()
            .map(|s| self.senders().sender_key(s).to_string())
            .filter(|k| self.reach.covers(k))
            .collect()
    }

    /// The sender keys a read filters on: the one it names, else those in reach (`None`:
    /// every sender, no filter).
    pub fn keys_to_read(&self, named: Option<&str>) -> Option<Vec<String>> {
        match named {
            Some(key) => Some(vec![key.to_string()]),
            None => self.reach.keys().map(<[String]>::to_vec),
        }
    }

    /// The sender a call without `from` is about: the deployment's default when in reach,
    /// else the first sender in reach in the senders file's order (a limited caller's own
    /// number, never another business's).
    pub(crate) fn default_in_reach(&self) -> Result<&warden_settings::Sender, CoreError> {
        let senders = self.senders();
        let default = senders.default();
        if self.reach.covers(senders.sender_key(default)) {
            return Ok(default);
        }
        senders
            .all()
            .iter()
            .find(|s| self.reach.covers(senders.sender_key(s)))
            .ok_or_else(|| {
                CoreError::InvalidArgument(
                    "from: this caller may use none of this deployment's senders".into(),
                )
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_covers_everything_and_only_its_keys() {
        assert!(Reach::all().covers("default"));
        assert!(!Reach::all().is_limited());
        let r = Reach::only(["a1".to_string()]);
        assert!(r.covers("a1"));
        assert!(!r.covers("b1"));
        assert!(!r.covers("default"));
        assert!(r.covers_all(["a1", "a1"]));
        assert!(!r.covers_all(["a1", "a2"]));
        assert!(Reach::only(Vec::new()).covers_all([]));
        assert!(!Reach::only(Vec::new()).covers("a1"));
    }
}
