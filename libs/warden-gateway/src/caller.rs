//! Who is calling: the agent behind a request and the scopes it holds.
//!
//! stdio is local and unauthenticated: every request acts as the gateway's local caller
//! (agent `stdio`, or `MCP_AGENT`), holding every scope. Over HTTP the transport
//! authenticates the request and puts the [`Caller`] into the HTTP request's extensions;
//! rmcp hands those to the handler inside `http::request::Parts`, where
//! [`Caller::of_request`] finds it.

use std::collections::BTreeSet;
use std::fmt;

use rmcp::RoleServer;
use rmcp::service::RequestContext;

/// What an agent may do. The tool → scope map lives with the tool groups.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Scope {
    /// Read-only tools, resources, listen.
    Read,
    /// send_*, reply_customer, react, mark_as_read, retry_failed_messages.
    Send,
    /// schedule_message.
    Schedule,
    /// Campaign tools.
    Campaigns,
    /// create_template, sync_*.
    Templates,
    /// archive_chat, sync_webhooks, resume_sender.
    Admin,
}

impl Scope {
    pub const ALL: [Scope; 6] = [
        Scope::Read,
        Scope::Send,
        Scope::Schedule,
        Scope::Campaigns,
        Scope::Templates,
        Scope::Admin,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Read => "read",
            Scope::Send => "send",
            Scope::Schedule => "schedule",
            Scope::Campaigns => "campaigns",
            Scope::Templates => "templates",
            Scope::Admin => "admin",
        }
    }

    pub fn parse(name: &str) -> Option<Scope> {
        Scope::ALL.into_iter().find(|s| s.as_str() == name)
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The agent behind one request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Caller {
    /// Recorded as the actor of every audit row and message it causes.
    pub agent: String,
    pub scopes: BTreeSet<Scope>,
    /// The senders (ids of the senders file) it may send from and read; `None`: all.
    pub senders: Option<Vec<String>>,
}

impl Caller {
    /// A local (stdio) caller: every scope, every sender.
    pub fn local(agent: impl Into<String>) -> Caller {
        Caller {
            agent: agent.into(),
            scopes: Scope::ALL.into_iter().collect(),
            senders: None,
        }
    }

    /// The same caller limited to `senders` (`None`: all).
    pub fn with_senders(mut self, senders: Option<Vec<String>>) -> Caller {
        self.senders = senders;
        self
    }

    pub fn may(&self, scope: Scope) -> bool {
        self.scopes.contains(&scope)
    }

    /// Whether it may send from or read the sender with this id.
    pub fn may_use(&self, sender_id: &str) -> bool {
        self.senders
            .as_ref()
            .is_none_or(|allowed| allowed.iter().any(|a| a == sender_id))
    }

    /// The caller the HTTP transport attached to this request, if any (none over stdio).
    pub fn of_request(context: &RequestContext<RoleServer>) -> Option<Caller> {
        context
            .extensions
            .get::<http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<Caller>())
            .cloned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scope_names_round_trip() {
        for s in Scope::ALL {
            assert_eq!(Scope::parse(s.as_str()), Some(s));
        }
        assert_eq!(Scope::parse("root"), None);
    }

    #[test]
    fn local_caller_holds_every_scope() {
        let c = Caller::local("stdio");
        assert!(Scope::ALL.into_iter().all(|s| c.may(s)));
    }
}
