//! The line of a node of a YAML text, by its path (`senders`, 1, `id`).
//!
//! serde_yaml keeps no positions in a parsed value, but it stamps an error with the
//! position of the node being read when the error is raised. A probe walks the text to
//! the node and fails there on purpose; the failure's location is the node's line. One
//! parse per question: a senders file is small, and only problems are located.

use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

/// One step from a node to a child.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Step {
    Key(String),
    Index(usize),
}

/// The marker of the probe's own failure (any other error: the path is not there).
const FOUND: &str = "\u{1}warden-senders-probe\u{1}";

/// The 1-based line of the node at `path`: of its key when `key` (the last step must be a
/// `Key`), else of its value. `None` when the path is not in the text.
pub(super) fn line(text: &str, path: &[Step], key: bool) -> Option<usize> {
    if key && !matches!(path.last(), Some(Step::Key(_))) {
        return None;
    }
    let probe = Probe { path, key };
    match probe.deserialize(serde_yaml::Deserializer::from_str(text)) {
        Err(e) if e.to_string().contains(FOUND) => e.location().map(|l| l.line()),
        _ => None,
    }
}

/// The line of the key at `path`, else of the closest ancestor found, else 1.
pub(super) fn key_line(text: &str, path: &[Step]) -> usize {
    line(text, path, true)
        .unwrap_or_else(|| value_line(text, &path[..path.len().saturating_sub(1)]))
}

/// The line of the value at `path` (a scalar's own line, a mapping's first key), else of
/// its key, else of the closest ancestor found, else 1.
pub(super) fn value_line(text: &str, path: &[Step]) -> usize {
    let mut path = path;
    loop {
        if path.is_empty() {
            return line(text, path, false).unwrap_or(1);
        }
        if let Some(n) = line(text, path, false).or_else(|| line(text, path, true)) {
            return n;
        }
        path = &path[..path.len() - 1];
    }
}

struct Probe<'p> {
    path: &'p [Step],
    key: bool,
}

impl<'de> DeserializeSeed<'de> for Probe<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        match self.path.first() {
            // Fail inside the node's own read, so the error carries its position.
            None => d.deserialize_any(Fail),
            Some(Step::Key(_)) => d.deserialize_map(self),
            Some(Step::Index(_)) => d.deserialize_seq(self),
        }
    }
}

impl<'de> Visitor<'de> for Probe<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a mapping or a list")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let Some(Step::Key(wanted)) = self.path.first() else {
            return Ok(());
        };
        let rest = &self.path[1..];
        let fail_on_key = rest.is_empty() && self.key;
        while let Some(hit) = map.next_key_seed(KeySeed {
            wanted,
            fail: fail_on_key,
        })? {
            if hit {
                return map.next_value_seed(Probe {
                    path: rest,
                    key: self.key,
                });
            }
            map.next_value::<IgnoredAny>()?;
        }
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let Some(Step::Index(wanted)) = self.path.first() else {
            return Ok(());
        };
        for _ in 0..*wanted {
            if seq.next_element::<IgnoredAny>()?.is_none() {
                return Ok(());
            }
        }
        seq.next_element_seed(Probe {
            path: &self.path[1..],
            key: self.key,
        })
        .map(|_| ())
    }
}

/// Fails whatever the node is (every default `visit_*` reports "expected {expecting}").
struct Fail;

impl Visitor<'_> for Fail {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(FOUND)
    }
}

/// Reads a key: whether it is the wanted one (failing there when `fail`).
struct KeySeed<'w> {
    wanted: &'w str,
    fail: bool,
}

impl KeySeed<'_> {
    fn check<E: de::Error>(&self, key: &str) -> Result<bool, E> {
        match (key == self.wanted, self.fail) {
            (true, true) => Err(E::custom(FOUND)),
            (hit, _) => Ok(hit),
        }
    }
}

impl<'de> DeserializeSeed<'de> for KeySeed<'_> {
    type Value = bool;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<bool, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for KeySeed<'_> {
    type Value = bool;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a key")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<bool, E> {
        self.check(v)
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<bool, E> {
        self.check(&v.to_string())
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<bool, E> {
        self.check(&v.to_string())
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<bool, E> {
        self.check(&v.to_string())
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<bool, E> {
        self.check(&v.to_string())
    }
    fn visit_unit<E: de::Error>(self) -> Result<bool, E> {
        self.check("~")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<bool, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(false)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<bool, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(false)
    }
    fn visit_enum<A: de::EnumAccess<'de>>(self, data: A) -> Result<bool, A::Error> {
        // A tagged key (`!tag key: ...`): never one of ours.
        let (IgnoredAny, variant) = data.variant::<IgnoredAny>()?;
        de::VariantAccess::newtype_variant::<IgnoredAny>(variant)?;
        Ok(false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(k: &str) -> Step {
        Step::Key(k.to_string())
    }

    #[test]
    fn finds_keys_values_and_entries_in_block_and_flow_style() {
        let text = "version: 1\n# c\nsenders:\n  - id: a1\n    phone_number_id: 1\n\n  - {id: a2,\n     phone_number_id: '2', x: [1,2]}\n  -\n    id: b1\n    mps: 3\n";
        let senders = || vec![key("senders")];
        let at = |mut p: Vec<Step>, more: &[Step]| {
            p.extend_from_slice(more);
            p
        };
        assert_eq!(line(text, &[key("version")], true), Some(1));
        assert_eq!(line(text, &senders(), true), Some(3));
        assert_eq!(line(text, &senders(), false), Some(4));
        assert_eq!(
            line(text, &at(senders(), &[Step::Index(0)]), false),
            Some(4)
        );
        assert_eq!(
            line(text, &at(senders(), &[Step::Index(1)]), false),
            Some(7)
        );
        assert_eq!(
            line(text, &at(senders(), &[Step::Index(2)]), false),
            Some(10)
        );
        assert_eq!(line(text, &at(senders(), &[Step::Index(3)]), false), None);
        let pnid = at(senders(), &[Step::Index(1), key("phone_number_id")]);
        assert_eq!(line(text, &pnid, true), Some(8));
        assert_eq!(line(text, &pnid, false), Some(8));
        let mps = at(senders(), &[Step::Index(2), key("mps")]);
        assert_eq!(line(text, &mps, true), Some(11));
        let nope = at(senders(), &[Step::Index(2), key("nope")]);
        assert_eq!(line(text, &nope, true), None);
        // Falls back to the entry.
        assert_eq!(key_line(text, &nope), 10);
        assert_eq!(value_line(text, &nope), 10);
        assert_eq!(value_line("", &[key("version")]), 1);
        assert_eq!(value_line("{{{", &[key("version")]), 1);
    }
}
