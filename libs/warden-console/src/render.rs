//! Server-rendered HTML: the templates (compiled in, escaped by default) and the
//! responses every handler shares (a page, a redirect, an error page).

use actix_web::HttpResponse;
use actix_web::http::StatusCode;
use actix_web::http::header::{CACHE_CONTROL, LOCATION};
use minijinja::{Environment, Value, context};

/// Every template, by name (`.html`: HTML escaping on).
const TEMPLATES: &[(&str, &str)] = &[
    ("base.html", include_str!("../templates/base.html")),
    ("login.html", include_str!("../templates/login.html")),
    ("error.html", include_str!("../templates/error.html")),
    ("overview.html", include_str!("../templates/overview.html")),
    (
        "conversations.html",
        include_str!("../templates/conversations.html"),
    ),
    (
        "inbox_table.html",
        include_str!("../templates/inbox_table.html"),
    ),
    (
        "conversation.html",
        include_str!("../templates/conversation.html"),
    ),
    (
        "customers.html",
        include_str!("../templates/customers.html"),
    ),
    ("customer.html", include_str!("../templates/customer.html")),
    (
        "campaigns.html",
        include_str!("../templates/campaigns.html"),
    ),
    ("campaign.html", include_str!("../templates/campaign.html")),
    (
        "templates.html",
        include_str!("../templates/templates.html"),
    ),
    ("agents.html", include_str!("../templates/agents.html")),
    ("policies.html", include_str!("../templates/policies.html")),
    ("audit.html", include_str!("../templates/audit.html")),
];

pub struct Templates {
    env: Environment<'static>,
}

impl Templates {
    /// The compiled-in templates. A template that does not parse is a bug caught by the
    /// unit test below, so this never fails at run time.
    pub fn load() -> Templates {
        let mut env = Environment::new();
        env.add_filter("when", when);
        env.add_filter("who", who);
        for (name, source) in TEMPLATES {
            if let Err(e) = env.add_template(name, source) {
                panic!("template {name}: {e}");
            }
        }
        Templates { env }
    }

    /// Render `name` with `ctx`; an error is logged and shown as a 500 page.
    pub fn render(&self, name: &str, ctx: Value) -> Result<String, minijinja::Error> {
        self.env.get_template(name)?.render(ctx)
    }

    /// A full page: 200 and the HTML, never cached.
    pub fn page(&self, name: &str, ctx: Value) -> HttpResponse {
        self.page_with(StatusCode::OK, name, ctx)
    }

    pub fn page_with(&self, status: StatusCode, name: &str, ctx: Value) -> HttpResponse {
        match self.render(name, ctx) {
            Ok(html) => HttpResponse::build(status)
                .content_type("text/html; charset=utf-8")
                .insert_header((CACHE_CONTROL, "no-store"))
                .body(html),
            Err(e) => {
                tracing::error!(template = name, error = %e, "template failed");
                HttpResponse::InternalServerError()
                    .content_type("text/plain; charset=utf-8")
                    .body("the page could not be rendered")
            }
        }
    }

    /// An error page with `status` (403, 404, 409, 503...).
    pub fn error(&self, status: StatusCode, title: &str, message: &str) -> HttpResponse {
        self.page_with(
            status,
            "error.html",
            context! { title => title, message => message, status => status.as_u16() },
        )
    }
}

/// `{{ t|when }}`: a stored time as people read it. The server writes UTC to the minute
/// inside `<time datetime=...>` with the exact time as its title; the page's script
/// (base.html) rewrites it in the operator's own time zone, relative when it is today
/// ("5 min ago"). Anything that is not a time is shown as it is (escaped); none as "never".
pub fn when(v: Value) -> Value {
    if v.is_none() || v.is_undefined() {
        return Value::from("never");
    }
    let raw = v
        .as_str()
        .map(str::to_string)
        .unwrap_or_else(|| v.to_string());
    match chrono::DateTime::parse_from_rfc3339(&raw) {
        Ok(t) => {
            let t = t.with_timezone(&chrono::Utc);
            Value::from_safe_string(format!(
                "<time datetime=\"{}\" title=\"{}\">{}</time>",
                t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
                t.format("%Y-%m-%d %H:%M:%S UTC"),
                t.format("%Y-%m-%d %H:%M UTC"),
            ))
        }
        Err(_) => Value::from(raw),
    }
}

/// The non-agent actors the core records, by how a person would call them.
const SERVICES: &[(&str, &str)] = &[
    ("webhook", "the platform (webhook)"),
    ("scheduler", "Warden's scheduler"),
    ("campaign", "a campaign"),
    ("dispatcher", "Warden's dispatcher"),
    ("dispatcher-sweep", "Warden's dispatcher"),
    ("relay", "Warden's scheduler"),
    ("retention", "retention"),
    ("system", "Warden"),
    ("console", "the console"),
    ("warden-admin", "warden-admin"),
    ("admin", "warden-admin"),
    ("business_app", "a person (WhatsApp Business app)"),
    ("customer", "the customer"),
];

/// The name every local (stdio) agent has unless `MCP_AGENT` names it.
const LOCAL_AGENT: &str = "stdio";

/// `{{ actor|who }}`: who did something, named for a person: an agent by its identity
/// ("agent bot-3"), the local stdio caller as "agent (local)", an operator by name, a
/// Warden service by what it is.
pub fn who(actor: Option<String>) -> String {
    let Some(actor) = actor.filter(|a| !a.is_empty()) else {
        return "Warden".into();
    };
    if actor == LOCAL_AGENT {
        return "agent (local)".into();
    }
    if let Some(name) = actor.strip_prefix("operator:") {
        return format!("operator {name}");
    }
    if let Some((_, shown)) = SERVICES.iter().find(|(a, _)| *a == actor) {
        return (*shown).into();
    }
    format!("agent {actor}")
}

/// A serde value for a template (the core's read models are `Serialize`).
pub fn ser<T: serde::Serialize>(v: &T) -> Value {
    Value::from(minijinja::value::Serde(v))
}

/// 303 See Other to `to` (after every POST, and to `/login` without a session).
pub fn see_other(to: &str) -> HttpResponse {
    HttpResponse::SeeOther()
        .insert_header((LOCATION, to))
        .finish()
}

/// Percent-encode a query value or path segment.
pub fn encode(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    for b in raw.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_template_parses_and_escapes() {
        let t = Templates::load();
        let html = t
            .render(
                "error.html",
                context! { title => "<b>", message => "<script>x</script>", status => 404 },
            )
            .unwrap();
        assert!(html.contains("&lt;script&gt;"), "{html}");
        assert!(!html.contains("<script>x"), "{html}");
    }

    #[test]
    fn times_are_shown_to_the_minute_with_the_exact_time_on_hover() {
        let html = when(Value::from("2026-11-29T04:27:18.323091Z")).to_string();
        assert_eq!(
            html,
            "<time datetime=\"2026-11-29T04:27:18.323Z\" title=\"2026-11-29 04:27:18 UTC\">2026-11-29 04:27 UTC</time>"
        );
        assert_eq!(when(Value::from(())).to_string(), "never");
        assert_eq!(when(Value::from("soon")).to_string(), "soon");
    }

    #[test]
    fn actors_are_named_for_people() {
        assert_eq!(who(Some("stdio".into())), "agent (local)");
        assert_eq!(who(Some("bot-3".into())), "agent bot-3");
        assert_eq!(who(Some("operator:ana".into())), "operator ana");
        assert_eq!(who(Some("webhook".into())), "the platform (webhook)");
        assert_eq!(who(None), "Warden");
    }

    #[test]
    fn encoding() {
        assert_eq!(encode("a b&c/é"), "a%20b%26c%2F%C3%A9");
    }
}
