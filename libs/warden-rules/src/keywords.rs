//! Stop and resume keywords in inbound customer texts.
//!
//! docs/compliance.md: the whole message, case-insensitive, is one of STOP, STOP ALL,
//! UNSUBSCRIBE, OPT OUT, OPTOUT, CANCEL, END, QUIT, STOP PROMOTIONS (opt out of
//! marketing *and* utility), or START, UNSTOP, RESUME (opt back in to both).
//! "Whole message" means a keyword inside a sentence ("please stop") is not one.
//! Before matching, the text is trimmed, inner whitespace runs become one space,
//! `-`/`_` count as a space ("opt-out") and trailing `.`/`!` are dropped ("STOP!"):
//! over-matching an opt-out is the safe error, missing one is not.

use serde::Serialize;

/// What an inbound text asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum OptChange {
    /// Opt out of marketing and utility.
    Stop,
    /// Opt back in to marketing and utility.
    Resume,
}

impl OptChange {
    /// `stop` or `resume`, as recorded in the audit log.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Stop => "stop",
            Self::Resume => "resume",
        }
    }
}

/// The `opt_change_reason` recorded when a consent changes (`stop via keyword`).
pub fn opt_change_reason(change: OptChange, source: &str) -> String {
    format!("{} via {source}", change.as_str())
}

/// True when the customer's current opt-out is their own doing (a STOP keyword, the
/// platform's user preference or its 131050): only the customer lifts it (START/UNSTOP,
/// the platform's resume event), never an operator's import.
pub fn is_customer_opt_out(reason: Option<&str>) -> bool {
    reason.is_some_and(|r| r.starts_with("stop via "))
}

/// The stop keywords, normalised (upper case, single spaces).
pub const STOP_KEYWORDS: [&str; 9] = [
    "STOP",
    "STOP ALL",
    "UNSUBSCRIBE",
    "OPT OUT",
    "OPTOUT",
    "CANCEL",
    "END",
    "QUIT",
    "STOP PROMOTIONS",
];

/// The resume keywords, normalised.
pub const RESUME_KEYWORDS: [&str; 3] = ["START", "UNSTOP", "RESUME"];

/// Longest input worth normalising; longer texts are never a keyword.
const MAX_KEYWORD_INPUT: usize = 64;

fn normalise(text: &str) -> Option<String> {
    let t = text.trim();
    if t.len() > MAX_KEYWORD_INPUT {
        return None;
    }
    let spaced: String = t
        .chars()
        .map(|c| if c == '-' || c == '_' { ' ' } else { c })
        .collect();
    let spaced = spaced.trim_end_matches(['.', '!']);
    Some(
        spaced
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .to_uppercase(),
    )
}

/// Classifies an inbound text as a stop or resume request, or neither.
pub fn classify_inbound(text: &str) -> Option<OptChange> {
    let n = normalise(text)?;
    if STOP_KEYWORDS.contains(&n.as_str()) {
        Some(OptChange::Stop)
    } else if RESUME_KEYWORDS.contains(&n.as_str()) {
        Some(OptChange::Resume)
    } else {
        None
    }
}

/// Reads a platform `user_preferences` value (`stop` / `resume`, any case).
pub fn parse_preference(value: &str) -> Option<OptChange> {
    match value.trim().to_ascii_lowercase().as_str() {
        "stop" => Some(OptChange::Stop),
        "resume" => Some(OptChange::Resume),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn every_stop_keyword_in_any_case_and_spacing() {
        for k in STOP_KEYWORDS {
            assert_eq!(classify_inbound(k), Some(OptChange::Stop), "{k}");
            assert_eq!(
                classify_inbound(&k.to_lowercase()),
                Some(OptChange::Stop),
                "{k}"
            );
            let spaced = format!("  {}\n", k.replace(' ', "   "));
            assert_eq!(
                classify_inbound(&spaced),
                Some(OptChange::Stop),
                "{spaced:?}"
            );
        }
        assert_eq!(classify_inbound("Stop Promotions"), Some(OptChange::Stop));
        assert_eq!(classify_inbound("opt-out"), Some(OptChange::Stop));
        assert_eq!(classify_inbound("STOP!"), Some(OptChange::Stop));
        assert_eq!(classify_inbound("stop."), Some(OptChange::Stop));
        assert_eq!(classify_inbound("\tstop\t all "), Some(OptChange::Stop));
    }

    #[test]
    fn resume_keywords() {
        for k in ["START", "start", " Unstop ", "resume", "RESUME."] {
            assert_eq!(classify_inbound(k), Some(OptChange::Resume), "{k}");
        }
    }

    #[test]
    fn only_whole_messages_count() {
        for t in [
            "please stop",
            "stop it",
            "don't stop",
            "STOPP",
            "the end",
            "start over please",
            "",
            "   ",
            "stop stop",
            "s t o p",
            "?",
            "st0p",
        ] {
            assert_eq!(classify_inbound(t), None, "{t:?}");
        }
    }

    #[test]
    fn preferences() {
        assert_eq!(parse_preference("stop"), Some(OptChange::Stop));
        assert_eq!(parse_preference("RESUME"), Some(OptChange::Resume));
        assert_eq!(parse_preference("maybe"), None);
        assert_eq!(OptChange::Stop.as_str(), "stop");
        let reason = opt_change_reason(OptChange::Stop, "keyword");
        assert!(is_customer_opt_out(Some(&reason)));
        assert!(!is_customer_opt_out(Some(&opt_change_reason(
            OptChange::Resume,
            "keyword"
        ))));
        assert!(!is_customer_opt_out(None));
    }

    proptest! {
        #[test]
        fn never_panics(s in "\\PC*") {
            let _ = classify_inbound(&s);
        }
    }
}
