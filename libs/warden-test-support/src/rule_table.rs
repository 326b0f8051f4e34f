//! THE rule table (docs/compliance.md, "Compliance rules and decisions"), written out by
//! hand for the tests' policy file ([`crate::POLICIES`]) and independently of
//! `warden_rules::compliance::decide`: the oracle every way of asking the rules is checked
//! against. warden-rules' `tests/it/rule_table.rs` checks the pure decision and recheck;
//! warden-gateway's `tests/it/compliance_paths.rs` checks every real entry path with a
//! database.
//!
//! The content's category decides (never the caller's label). Checks in order: template
//! status, opt-out, the conversation's holder ([`held`]: free-form and marketing while a
//! person or another app holds it), window (free-form), cap (marketing), then the policies
//! in file order.

use proptest::prelude::*;

/// The customer's 24-hour care window.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Window {
    Open,
    Closed,
    Never,
    /// A stored inbound time in the future (a broken or forged timestamp).
    Implausible,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OptOut {
    None,
    Marketing,
    All,
}

/// A customer, as far as the rules look at one.
#[derive(Clone, Debug)]
pub struct Customer {
    pub window: Window,
    pub opt_out: OptOut,
    /// The marketing cap (2 a day) is used up.
    pub cap_reached: bool,
    pub tags: Vec<String>,
    /// A +1 number (no marketing there).
    pub us: bool,
}

impl Customer {
    pub fn tags(&self) -> Vec<&str> {
        self.tags.iter().map(String::as_str).collect()
    }
}

/// The reason code (`OK` when allowed) for sending content of `category` (`service` for
/// free-form, else the template's stored category) to `c`; `template_approved` is false
/// for a template whose status is not APPROVED.
pub fn decision(c: &Customer, category: &str, template_approved: bool) -> &'static str {
    assert!(
        matches!(
            category,
            "service" | "marketing" | "utility" | "authentication"
        ),
        "not a category: {category}"
    );
    if !template_approved {
        return "TEMPLATE_NOT_APPROVED";
    }
    let has = |t: &str| c.tags.iter().any(|x| x.eq_ignore_ascii_case(t));
    let opted_out = match category {
        "marketing" => c.opt_out != OptOut::None,
        _ => c.opt_out == OptOut::All,
    };
    if opted_out {
        return "USER_OPTED_OUT";
    }
    if category == "service" && c.window != Window::Open {
        return "TEMPLATE_REQUIRED";
    }
    if category == "marketing" && c.cap_reached {
        return "FREQUENCY_CAP_EXCEEDED";
    }
    if category == "marketing" && (has("vip") || c.us) {
        return "POLICY_RESTRICTION";
    }
    if has("blocked") {
        return "POLICY_RESTRICTION";
    }
    "OK"
}

/// What the dispatcher re-checks right before the call (template status, opt-out,
/// window); the rest was decided at acceptance.
pub fn recheck(c: &Customer, category: &str, template_approved: bool) -> &'static str {
    match decision(c, category, template_approved) {
        code @ ("TEMPLATE_NOT_APPROVED" | "USER_OPTED_OUT" | "TEMPLATE_REQUIRED") => code,
        _ => "OK",
    }
}

/// Who holds the customer's conversation on a shared number (docs/compliance.md, "Shared
/// numbers"): nobody else, a person, or another app.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Holder {
    Agents,
    Human,
    OtherApp,
}

/// `code` (the table's decision or recheck for `category`) with the holder applied, for a
/// message an agent asked for: while a person or another app holds the conversation,
/// free-form and marketing are `CONVERSATION_HELD`, after a template that is not approved
/// and an opt-out, before everything else; utility and authentication go through.
pub fn held(code: &'static str, holder: Holder, category: &str) -> &'static str {
    if holder == Holder::Agents
        || !matches!(category, "service" | "marketing")
        || matches!(code, "TEMPLATE_NOT_APPROVED" | "USER_OPTED_OUT")
    {
        return code;
    }
    "CONVERSATION_HELD"
}

/// Any holder.
pub fn holders() -> impl Strategy<Value = Holder> {
    prop_oneof![
        2 => Just(Holder::Agents),
        1 => Just(Holder::Human),
        1 => Just(Holder::OtherApp)
    ]
}

/// Any customer: each window, opt-out and cap state, up to two tags in any case from
/// `vip`, `blocked` and `gold`, a +1 number or not.
pub fn customers() -> impl Strategy<Value = Customer> {
    (
        prop_oneof![
            Just(Window::Open),
            Just(Window::Closed),
            Just(Window::Never),
            Just(Window::Implausible)
        ],
        prop_oneof![
            Just(OptOut::None),
            Just(OptOut::Marketing),
            Just(OptOut::All)
        ],
        any::<bool>(),
        proptest::sample::subsequence(
            vec!["vip", "VIP", "Vip", "blocked", "BLOCKED", "Blocked", "gold"],
            0..3,
        ),
        any::<bool>(),
    )
        .prop_map(|(window, opt_out, cap_reached, tags, us)| Customer {
            window,
            opt_out,
            cap_reached,
            tags: tags.into_iter().map(String::from).collect(),
            us,
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn customer() -> Customer {
        Customer {
            window: Window::Open,
            opt_out: OptOut::None,
            cap_reached: false,
            tags: vec![],
            us: false,
        }
    }

    #[test]
    fn the_order_of_the_checks() {
        let all_out = Customer {
            opt_out: OptOut::All,
            window: Window::Closed,
            ..customer()
        };
        assert_eq!(
            decision(&all_out, "utility", false),
            "TEMPLATE_NOT_APPROVED"
        );
        assert_eq!(decision(&all_out, "service", true), "USER_OPTED_OUT");
        let vip_capped = Customer {
            cap_reached: true,
            tags: vec!["VIP".into()],
            ..customer()
        };
        assert_eq!(
            decision(&vip_capped, "marketing", true),
            "FREQUENCY_CAP_EXCEEDED"
        );
        assert_eq!(decision(&vip_capped, "utility", true), "OK");
        assert_eq!(recheck(&vip_capped, "marketing", true), "OK");
    }

    #[test]
    fn a_held_conversation_after_the_template_and_the_opt_out() {
        let closed = Customer {
            window: Window::Closed,
            ..customer()
        };
        let d = decision(&closed, "service", true);
        assert_eq!(held(d, Holder::Human, "service"), "CONVERSATION_HELD");
        assert_eq!(held(d, Holder::Agents, "service"), "TEMPLATE_REQUIRED");
        assert_eq!(held("OK", Holder::OtherApp, "utility"), "OK");
        assert_eq!(
            held("USER_OPTED_OUT", Holder::Human, "marketing"),
            "USER_OPTED_OUT"
        );
    }
}
