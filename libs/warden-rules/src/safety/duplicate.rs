//! `duplicate_guard`: the same content to the same customer within `window` is refused.
//!
//! Same content = the same text once case and white space are folded (free text, or the
//! caption/body of a rich message), or the same template, locale and variables/components.

use chrono::TimeDelta;
use serde_json::Value;

/// The fingerprint two messages share when they say the same thing; `None` for content
/// that carries nothing to compare (e.g. a reaction).
pub fn fingerprint(content: &Value) -> Option<String> {
    let kind = content.get("type")?.as_str()?;
    if kind == "template" {
        let t = content.get("template")?;
        let name = t.get("name").and_then(Value::as_str).unwrap_or("");
        let locale = t
            .get("locale")
            .and_then(Value::as_str)
            .or_else(|| t.pointer("/language/code").and_then(Value::as_str))
            .unwrap_or("");
        let vars = t.get("variables").cloned().unwrap_or(Value::Null);
        let comps = t.get("components").cloned().unwrap_or(Value::Null);
        return Some(format!("template\n{name}\n{locale}\n{vars}\n{comps}"));
    }
    if kind == "reaction" {
        return None;
    }
    // Free text and rich messages: what the customer reads, folded; the media link too, so
    // two different images with one caption are two messages.
    let words = super::content::texts(content)
        .into_iter()
        .map(fold)
        .collect::<Vec<_>>()
        .join("\n");
    let media = content
        .get(kind)
        .and_then(|b| b.get("link").or_else(|| b.get("id")))
        .map(Value::to_string)
        .unwrap_or_default();
    Some(format!("{kind}\n{media}\n{words}"))
}

/// Case and white space folded: `" Hello\n  WORLD "` -> `"hello world"`.
pub fn fold(text: &str) -> String {
    text.split_whitespace()
        .map(str::to_lowercase)
        .collect::<Vec<_>>()
        .join(" ")
}

/// A validated duplicate guard.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DuplicateGuard {
    /// How long an accepted message blocks its duplicate.
    pub window: TimeDelta,
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn text(body: &str) -> Value {
        json!({"type": "text", "text": {"body": body}})
    }

    #[test]
    fn same_and_different() {
        assert_eq!(
            fingerprint(&text("Hello  World")),
            fingerprint(&text(" hello\nworld "))
        );
        assert_ne!(
            fingerprint(&text("hello world")),
            fingerprint(&text("hello, world"))
        );
        let t = |vars: Value| json!({"type": "template", "template": {"name": "n", "locale": "en", "variables": vars}});
        assert_eq!(fingerprint(&t(json!(["a"]))), fingerprint(&t(json!(["a"]))));
        assert_ne!(fingerprint(&t(json!(["a"]))), fingerprint(&t(json!(["b"]))));
        assert_ne!(fingerprint(&t(json!(["a"]))), fingerprint(&text("a")));
        let img = |link: &str| json!({"type": "image", "image": {"link": link, "caption": "Hi"}});
        assert_ne!(
            fingerprint(&img("https://a/1.jpg")),
            fingerprint(&img("https://a/2.jpg"))
        );
        assert_eq!(
            fingerprint(&json!({"type": "reaction", "reaction": {"emoji": "x"}})),
            None
        );
    }

    proptest! {
        #[test]
        fn case_and_spacing_never_matter(words in prop::collection::vec("[a-zA-Z0-9]{1,8}", 1..8), seps in prop::collection::vec("[ \t\n]{1,3}", 8)) {
            let plain = words.join(" ");
            let mut messy = String::from(" ");
            for (i, w) in words.iter().enumerate() {
                messy.push_str(&w.to_uppercase());
                messy.push_str(&seps[i]);
            }
            prop_assert_eq!(fingerprint(&text(&plain)), fingerprint(&text(&messy)));
        }
    }
}
