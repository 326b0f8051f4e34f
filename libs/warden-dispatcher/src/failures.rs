//! A failed platform call, classified: what the message stores, whether the outcome is
//! unknown, and the one consequence `warden_core::delivery::platform_errors::consequence` decides
//! (retry, pair-rate back-off, side effect) — the same as for a status webhook reporting
//! the error. Pure, so it is unit-tested.

use warden_core::delivery::knowledge::{ErrorInfo, Explanation};
use warden_core::delivery::platform_errors::{self, Consequence};
use warden_platform::PlatformError;
use warden_store::models::Handling;

/// How a failed platform call is handled.
#[derive(Clone, Debug, PartialEq)]
pub struct Failure {
    /// The knowledge base's handling class (a fallback for errors it does not know).
    pub class: Handling,
    /// The platform error code (0 when there was none: timeouts, proxies, ...).
    pub code: i32,
    /// What the message stores if it ends failed (or keeps as its last error on retry).
    pub info: ErrorInfo,
    /// The request may have reached the platform (timeout, broken connection).
    pub outcome_unknown: bool,
    /// What happens next: retry, pair-rate back-off, side effect.
    pub consequence: Consequence,
}

/// Classify a platform error. `explained` is the knowledge base's entry for the error's
/// code (looked up by the caller when there is a code).
pub fn classify(err: &PlatformError, explained: Option<&Explanation>) -> Failure {
    match err {
        PlatformError::Api {
            http_status,
            code,
            message,
            details,
        } => {
            let code32 = i32::try_from(*code).unwrap_or(0);
            let said = match details.as_deref().filter(|d| !d.is_empty()) {
                Some(d) => format!("{message} ({d})"),
                None => message.clone(),
            };
            let (class, mut info) = match explained {
                Some(e) if e.known => (e.handling, ErrorInfo::from(e)),
                // Unknown code: a server error is worth another try, anything else is not
                // resent blindly (the knowledge base's cautious fallback).
                Some(e) if *http_status >= 500 => (Handling::Retry, retryable(ErrorInfo::from(e))),
                Some(e) => (e.handling, ErrorInfo::from(e)),
                None if *http_status >= 500 => (
                    Handling::Retry,
                    transport_info(
                        code32,
                        "upstream_transient",
                        "The platform failed while handling the request.",
                        true,
                    ),
                ),
                None => (
                    Handling::FixRequest,
                    transport_info(
                        code32,
                        "unknown",
                        "The platform refused the request.",
                        false,
                    ),
                ),
            };
            if !said.is_empty() {
                info.human_explanation =
                    format!("{} Platform said: {said}", info.human_explanation);
            }
            Failure {
                class,
                code: code32,
                info,
                outcome_unknown: false,
                consequence: platform_errors::consequence(
                    class,
                    code32,
                    explained.map(|e| e.title.as_str()).unwrap_or("halt"),
                ),
            }
        }
        PlatformError::Http { status, body } => {
            // 408: the server gave up reading the request (a slow or stalled connection),
            // so it did not act on it; 429: throttled. Both are worth another try.
            let retry = matches!(*status, 408 | 429) || *status >= 500;
            let mut info = transport_info(
                i32::from(*status),
                "upstream_http",
                &format!("The platform answered HTTP {status} without a platform error body."),
                retry,
            );
            if !body.trim().is_empty() {
                let short: String = body.chars().take(200).collect();
                info.human_explanation = format!("{} Body: {short}", info.human_explanation);
            }
            let class = if retry {
                Handling::Retry
            } else {
                Handling::FixRequest
            };
            let code = i32::from(*status);
            Failure {
                class,
                code,
                info,
                outcome_unknown: false,
                consequence: platform_errors::consequence(class, code, "http"),
            }
        }
        PlatformError::Timeout | PlatformError::Io(_) => Failure {
            class: Handling::Retry,
            code: 0,
            consequence: platform_errors::consequence(Handling::Retry, 0, "transport"),
            info: transport_info(
                0,
                "upstream_unreachable",
                &format!(
                    "No complete answer from the platform ({err}); the message may or may not have been accepted."
                ),
                true,
            ),
            outcome_unknown: true,
        },
        PlatformError::Connect(_) | PlatformError::Config(_) => Failure {
            class: Handling::Retry,
            code: 0,
            consequence: platform_errors::consequence(Handling::Retry, 0, "transport"),
            info: transport_info(
                0,
                "upstream_unreachable",
                &format!("The platform could not be reached ({err}); nothing was sent."),
                true,
            ),
            outcome_unknown: false,
        },
    }
}

fn retryable(mut info: ErrorInfo) -> ErrorInfo {
    info.can_retry = true;
    info
}

fn transport_info(code: i32, category: &str, explanation: &str, can_retry: bool) -> ErrorInfo {
    ErrorInfo {
        code,
        category: category.to_owned(),
        can_retry,
        human_explanation: explanation.to_owned(),
        suggested_action: if can_retry {
            "Warden retries automatically with backoff; if it keeps failing, check the platform's status and PLATFORM_API_URL, then use retry_failed_messages.".to_owned()
        } else {
            "Check the request and the platform's error reference before sending again.".to_owned()
        },
    }
}

/// The error of a message whose campaign was cancelled before it went out (the words
/// the scheduler uses when it fails a cancelled campaign's queued messages in bulk).
pub fn cancelled_campaign() -> ErrorInfo {
    use warden_core::campaigns::fanout::cancelled::{
        CANCELLED_ACTION, CANCELLED_CATEGORY, CANCELLED_EXPLANATION,
    };
    ErrorInfo {
        code: 0,
        category: CANCELLED_CATEGORY.to_owned(),
        can_retry: false,
        human_explanation: CANCELLED_EXPLANATION.to_owned(),
        suggested_action: CANCELLED_ACTION.to_owned(),
    }
}

/// The error of a message whose stored content cannot become a platform request.
pub fn bad_content(reason: &str) -> ErrorInfo {
    ErrorInfo {
        code: 0,
        category: "invalid_request".to_owned(),
        can_retry: false,
        human_explanation: format!(
            "The stored message cannot be sent as a platform request: {reason}."
        ),
        suggested_action: "Send a new message with valid content.".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use warden_core::delivery::platform_errors::SideEffect;

    fn known(code: i32, handling: Handling) -> Explanation {
        Explanation {
            code,
            title: "t".into(),
            category: "c".into(),
            can_retry: handling == Handling::Retry,
            handling,
            human_explanation: "why.".into(),
            suggested_action: "do.".into(),
            known: true,
        }
    }

    fn api(http_status: u16, code: i64) -> PlatformError {
        PlatformError::Api {
            http_status,
            code,
            message: "m".into(),
            details: Some("d".into()),
        }
    }

    #[test]
    fn classes_follow_the_knowledge_base() {
        let f = classify(
            &api(400, 131050),
            Some(&known(131050, Handling::RecordState)),
        );
        assert_eq!(f.class, Handling::RecordState);
        assert_eq!(f.consequence.effect, SideEffect::OptOutMarketing);
        assert_eq!(f.info.code, 131050);
        assert!(f.info.human_explanation.contains("Platform said: m (d)"));
        let f = classify(
            &api(400, 131026),
            Some(&known(131026, Handling::RecordState)),
        );
        assert_eq!(f.consequence.effect, SideEffect::Undeliverable);
        let f = classify(
            &api(400, 131049),
            Some(&known(131049, Handling::RecordState)),
        );
        assert_eq!(f.consequence.effect, SideEffect::MarketingLimited);
        let f = classify(&api(400, 131048), Some(&known(131048, Handling::Halt)));
        assert!(
            matches!(f.consequence.effect, SideEffect::ProtectSender(ref r) if r.contains("131048"))
        );
        let f = classify(&api(429, 130429), Some(&known(130429, Handling::Retry)));
        assert_eq!(f.class, Handling::Retry);
        assert!(!f.consequence.pair_rate);
        let f = classify(&api(400, 131056), Some(&known(131056, Handling::Retry)));
        assert!(f.consequence.pair_rate);
        let f = classify(
            &api(400, 132000),
            Some(&known(132000, Handling::FixRequest)),
        );
        assert_eq!(f.class, Handling::FixRequest);
    }

    #[test]
    fn unknown_codes_retry_only_on_server_errors() {
        let mut fallback = known(999, Handling::FixRequest);
        fallback.known = false;
        assert!(classify(&api(503, 999), Some(&fallback)).consequence.retry);
        assert!(classify(&api(503, 999), Some(&fallback)).info.can_retry);
        assert_eq!(
            classify(&api(400, 999), Some(&fallback)).class,
            Handling::FixRequest
        );
    }

    #[test]
    fn transport_errors_retry_and_flag_unknown_outcomes() {
        let t = classify(&PlatformError::Timeout, None);
        assert_eq!(t.class, Handling::Retry);
        assert!(t.outcome_unknown);
        let c = classify(&PlatformError::Connect("refused".into()), None);
        assert_eq!(c.class, Handling::Retry);
        assert!(!c.outcome_unknown);
        let h = classify(
            &PlatformError::Http {
                status: 502,
                body: "bad gateway".into(),
            },
            None,
        );
        assert_eq!(h.class, Handling::Retry);
        assert_eq!(h.info.code, 502);
        let h = classify(
            &PlatformError::Http {
                status: 404,
                body: String::new(),
            },
            None,
        );
        assert_eq!(h.class, Handling::FixRequest);
        for status in [408, 429] {
            let h = classify(
                &PlatformError::Http {
                    status,
                    body: String::new(),
                },
                None,
            );
            assert_eq!(h.class, Handling::Retry, "HTTP {status}");
            assert!(!h.outcome_unknown);
        }
    }
}
