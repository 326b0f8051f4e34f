//! The platform's error codes and what to do about each (seeded into error_knowledge_base).
//!
//! The handling class drives the dispatcher: `retry` (back off and try again), `fix_request`
//! (never resend as is), `record_state` (change path or record it on the customer) and `halt`
//! (stop sending from this account and alert). Codes from the platform's published reference.

use crate::models::Handling;

pub struct KnownError {
    pub code: i32,
    pub title: &'static str,
    pub category: &'static str,
    pub handling: Handling,
    pub explanation: &'static str,
    pub action: &'static str,
}

const fn e(
    code: i32,
    title: &'static str,
    category: &'static str,
    handling: Handling,
    explanation: &'static str,
    action: &'static str,
) -> KnownError {
    KnownError {
        code,
        title,
        category,
        handling,
        explanation,
        action,
    }
}

use Handling::{FixRequest, Halt, RecordState, Retry};

pub const KNOWN_ERRORS: &[KnownError] = &[
    // --- retry with backoff -------------------------------------------------------------
    e(
        1,
        "API unknown",
        "upstream_transient",
        Retry,
        "The platform hit an unknown error while handling the request; it is usually temporary.",
        "Retry with exponential backoff; if it persists, check the platform status page.",
    ),
    e(
        2,
        "API service temporarily unavailable",
        "upstream_transient",
        Retry,
        "The platform API was temporarily unavailable or overloaded.",
        "Retry with exponential backoff.",
    ),
    e(
        4,
        "API too many calls",
        "rate_limit",
        Retry,
        "The app reached its API call rate limit.",
        "Slow down and retry after a backoff; spread calls over time.",
    ),
    e(
        80007,
        "Rate limit issues",
        "rate_limit",
        Retry,
        "The business account reached its rate limit for this kind of call.",
        "Retry after a backoff; reduce the request rate for this account.",
    ),
    e(
        130429,
        "Rate limit hit",
        "throughput",
        Retry,
        "Cloud API message throughput was exceeded for this phone number.",
        "Retry with backoff; keep the send rate under the number's throughput (RATE_LIMIT_MPS).",
    ),
    e(
        131000,
        "Something went wrong",
        "upstream_transient",
        Retry,
        "The message failed because of an unknown error on the platform.",
        "Retry with backoff; if it keeps failing, contact platform support with the trace id.",
    ),
    e(
        131016,
        "Service unavailable",
        "upstream_transient",
        Retry,
        "A platform service is temporarily unavailable.",
        "Retry with backoff; check the platform status page.",
    ),
    e(
        131052,
        "Media download error",
        "media",
        Retry,
        "The media sent by the customer could not be downloaded.",
        "Retry the download later; ask the customer to resend if it keeps failing.",
    ),
    e(
        131053,
        "Media upload error",
        "media",
        Retry,
        "The media could not be uploaded, often because of an unsupported type or a temporary error.",
        "Check the media type and size, then retry.",
    ),
    e(
        131056,
        "(Business account, consumer account) pair rate limit hit",
        "pair_rate",
        Retry,
        "Too many messages were sent to this recipient in a short time.",
        "Wait before sending to this recipient again (about one message every 6 seconds); other recipients are unaffected.",
    ),
    e(
        131057,
        "Account in maintenance mode",
        "upstream_transient",
        Retry,
        "The business account is in maintenance mode, for example during a throughput upgrade.",
        "Retry after a few minutes.",
    ),
    e(
        133004,
        "Server temporarily unavailable",
        "upstream_transient",
        Retry,
        "The platform's server was temporarily unavailable.",
        "Retry with backoff.",
    ),
    // --- fix the request ------------------------------------------------------------------
    e(
        100,
        "Invalid parameter",
        "invalid_request",
        FixRequest,
        "The request had a parameter that is missing, misspelled or has an invalid value.",
        "Fix the request parameters; do not resend it unchanged.",
    ),
    e(
        33,
        "Parameter value is not valid",
        "invalid_request",
        FixRequest,
        "The phone number id or account id in the request does not exist or is not accessible.",
        "Check PLATFORM_PHONE_NUMBER_ID and PLATFORM_ACCOUNT_ID.",
    ),
    e(
        131008,
        "Required parameter is missing",
        "invalid_request",
        FixRequest,
        "The request is missing a required parameter.",
        "Add the missing parameter and send again.",
    ),
    e(
        131009,
        "Parameter value is not valid",
        "invalid_request",
        FixRequest,
        "One or more parameter values are invalid.",
        "Correct the parameter values; do not resend unchanged.",
    ),
    e(
        131021,
        "Recipient cannot be sender",
        "invalid_request",
        FixRequest,
        "The message was addressed to the sending number itself.",
        "Send to a different recipient.",
    ),
    e(
        131051,
        "Unsupported message type",
        "invalid_request",
        FixRequest,
        "The message type is not supported.",
        "Use a supported message type (text or template).",
    ),
    e(
        131055,
        "Method not allowed",
        "invalid_request",
        FixRequest,
        "The HTTP method is not allowed for this endpoint.",
        "Use the documented method for the endpoint.",
    ),
    e(
        132000,
        "Template param count mismatch",
        "template",
        FixRequest,
        "The number of variables does not match the number of placeholders in the template.",
        "Send exactly one value per {{n}} placeholder of the template.",
    ),
    e(
        132001,
        "Template does not exist",
        "template",
        FixRequest,
        "No template with this name exists in this language, or it is not approved yet.",
        "Check the template name and language with list_templates; use an APPROVED template.",
    ),
    e(
        132005,
        "Template hydrated text too long",
        "template",
        FixRequest,
        "The template text with the variables filled in is too long.",
        "Shorten the variable values.",
    ),
    e(
        132007,
        "Template format character policy violated",
        "template",
        FixRequest,
        "Template content violates the platform's formatting policy.",
        "Remove disallowed characters (new lines, tabs, more than 4 spaces) from variables.",
    ),
    e(
        132012,
        "Template parameter format mismatch",
        "template",
        FixRequest,
        "A variable value does not match the format the template expects.",
        "Send variables in the format the template declares.",
    ),
    e(
        132068,
        "Flow is in blocked state",
        "template",
        FixRequest,
        "The flow attached to the message is blocked.",
        "Fix or replace the flow before sending.",
    ),
    e(
        132069,
        "Flow is in throttled state",
        "template",
        FixRequest,
        "The flow attached to the message is throttled.",
        "Reduce sends that use this flow, or fix its health issues.",
    ),
    e(
        135000,
        "Generic user error",
        "invalid_request",
        FixRequest,
        "The message failed because of an unknown error with the request parameters.",
        "Review the request; do not resend unchanged.",
    ),
    e(
        131006,
        "Resource not found",
        "invalid_request",
        FixRequest,
        "The requested resource was not found.",
        "Check the id used in the request.",
    ),
    e(
        131054,
        "Media type not supported",
        "media",
        FixRequest,
        "The media type of the message is not supported.",
        "Send a supported media type.",
    ),
    // --- change path or record state --------------------------------------------------------
    e(
        131047,
        "Re-engagement message",
        "window",
        RecordState,
        "More than 24 hours have passed since the customer last replied, so free-form messages are not allowed.",
        "Send an approved template instead (send_template).",
    ),
    e(
        470,
        "Re-engagement message (legacy)",
        "window",
        RecordState,
        "The 24-hour customer service window is closed (legacy code for 131047).",
        "Send an approved template instead (send_template).",
    ),
    e(
        131049,
        "Per-user marketing limit",
        "marketing_limit",
        RecordState,
        "The platform did not deliver this marketing message to keep the customer's experience healthy (per-user marketing limit).",
        "Do not resend marketing to this customer within 24 hours; send later or use a utility template if appropriate.",
    ),
    e(
        131050,
        "User stopped marketing messages",
        "opt_out",
        RecordState,
        "The customer has chosen to stop receiving marketing messages from this business.",
        "Stop marketing to this customer; the opt-out is recorded. Only resume after they opt back in.",
    ),
    e(
        131026,
        "Message undeliverable",
        "recipient",
        RecordState,
        "The message could not be delivered: the number may not be on the platform, may have an old app version, or has not accepted the latest terms.",
        "Verify the number; mark the contact undeliverable and reach them through another channel.",
    ),
    e(
        130472,
        "User's number is part of an experiment",
        "experiment",
        RecordState,
        "The customer's number is in a platform experiment group and did not receive this marketing message.",
        "Do not retry; the customer is held out of marketing by the platform.",
    ),
    e(
        131037,
        "Display name approval needed",
        "account",
        RecordState,
        "The sending number needs an approved display name before messages can be sent.",
        "Get the display name approved in the business manager, then send again.",
    ),
    e(
        131058,
        "Hello world template only for public test numbers",
        "template",
        RecordState,
        "The hello_world sample template can only be sent from public test numbers.",
        "Use one of your own approved templates.",
    ),
    // --- halt and alert ---------------------------------------------------------------------
    e(
        131048,
        "Spam rate limit hit",
        "integrity",
        Halt,
        "Messages were restricted because too many previous messages from this number were blocked or flagged as spam.",
        "Pause campaigns and review message quality and opt-in practices before sending more.",
    ),
    e(
        131031,
        "Business account has been locked",
        "integrity",
        Halt,
        "The business account was locked for a policy violation or a failed data-integrity check.",
        "Stop sending; review the account's policy status and request a review.",
    ),
    e(
        131042,
        "Business eligibility payment issue",
        "account",
        Halt,
        "Messages failed because of a payment or eligibility problem with the account.",
        "Fix the payment method or eligibility in the business manager before sending.",
    ),
    e(
        131045,
        "Incorrect certificate",
        "account",
        Halt,
        "The sending number has no valid registration certificate.",
        "Re-register the phone number before sending.",
    ),
    e(
        133010,
        "Phone number not registered",
        "account",
        Halt,
        "The sending phone number is not registered on the platform.",
        "Register the phone number, then send again.",
    ),
    e(
        132015,
        "Template is paused",
        "template",
        Halt,
        "The template was paused for low quality and cannot be sent.",
        "Edit the template or use another approved template.",
    ),
    e(
        132016,
        "Template is disabled",
        "template",
        Halt,
        "The template was paused too many times and is permanently disabled.",
        "Create a new template with different content.",
    ),
    e(
        368,
        "Temporarily blocked for policy violations",
        "integrity",
        Halt,
        "The account is temporarily blocked for violating platform policies.",
        "Stop sending and review the policy notice before resuming.",
    ),
    e(
        190,
        "Access token has expired",
        "authentication",
        Halt,
        "The access token is invalid or has expired.",
        "Issue a new system-user token and update PLATFORM_ACCESS_TOKEN.",
    ),
    e(
        10,
        "Permission denied",
        "permission",
        Halt,
        "The app lacks the permission for this action or it was removed.",
        "Grant the whatsapp_business_messaging permission to the token's app.",
    ),
    e(
        131005,
        "Access denied",
        "permission",
        Halt,
        "The permission needed for this call is not granted or was removed.",
        "Check the token's permissions in the business manager.",
    ),
    e(
        200,
        "Permission error",
        "permission",
        Halt,
        "The token does not have the permission needed (for example whatsapp_business_management).",
        "Grant the missing permission and retry with the new token.",
    ),
    e(
        3,
        "API method",
        "permission",
        Halt,
        "The app does not have the capability to call this API.",
        "Check the app's capabilities and permissions.",
    ),
    e(
        133005,
        "Two-step verification PIN mismatch",
        "account",
        Halt,
        "The two-step verification PIN is wrong.",
        "Use the correct PIN or reset it in the business manager.",
    ),
    e(
        133006,
        "Phone number re-verification needed",
        "account",
        Halt,
        "The sending number must be verified again before it can be used.",
        "Verify the phone number again, then register it.",
    ),
];

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn at_least_forty_unique_codes_with_the_named_ones() {
        let codes: HashSet<i32> = KNOWN_ERRORS.iter().map(|e| e.code).collect();
        assert_eq!(codes.len(), KNOWN_ERRORS.len(), "duplicate code");
        assert!(codes.len() >= 40);
        for c in [
            130429, 131056, 131047, 131049, 131050, 131026, 131048, 190, 132000, 132001, 132015,
            132016,
        ] {
            assert!(codes.contains(&c), "{c} missing");
        }
    }

    #[test]
    fn handling_classes_match_the_platform_table() {
        let class = |code| {
            KNOWN_ERRORS
                .iter()
                .find(|e| e.code == code)
                .unwrap()
                .handling
        };
        for c in [
            4, 80007, 130429, 131000, 131016, 131057, 131052, 131053, 131056,
        ] {
            assert_eq!(class(c), Retry, "{c}");
        }
        for c in [
            100, 131008, 131009, 131021, 131051, 132000, 132001, 132005, 132007, 132012, 135000,
        ] {
            assert_eq!(class(c), FixRequest, "{c}");
        }
        for c in [131047, 470, 131049, 131050, 131026, 130472] {
            assert_eq!(class(c), RecordState, "{c}");
        }
        for c in [
            131048, 131031, 131042, 131045, 133010, 132015, 132016, 368, 190, 10, 131005, 200,
        ] {
            assert_eq!(class(c), Halt, "{c}");
        }
    }
}
