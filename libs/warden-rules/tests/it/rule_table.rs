//! The rule table (`warden_test_support::rule_table`, written out independently of
//! `decide`) and a property test that every way the rules are asked (a send's decision,
//! check_compliance's described content, the dispatcher's recheck) answers as the table
//! does, whatever label the caller gives. The database-backed half (each real entry path)
//! is warden-gateway's `tests/it/compliance_paths.rs`; it uses the same table.

use chrono::{DateTime, TimeDelta, TimeZone, Utc};
use proptest::prelude::*;
use warden_rules::compliance::{ComplianceInput, decide};
use warden_rules::kinds::{Category, ContentKind, MessageType, TemplateCategory};
use warden_rules::phone::canonicalize;
use warden_rules::policy::PolicySet;
use warden_rules::recheck::{RecheckInput, recheck};
use warden_test_support::POLICIES;
use warden_test_support::rule_table::{self, Customer, OptOut, Window, customers};

fn now() -> DateTime<Utc> {
    // 10:00 UTC: no quiet hours in the file anyway.
    Utc.with_ymd_and_hms(2026, 3, 3, 10, 0, 0).unwrap()
}

fn last_inbound(w: Window) -> Option<DateTime<Utc>> {
    match w {
        Window::Open => Some(now() - TimeDelta::hours(1)),
        Window::Closed => Some(now() - TimeDelta::hours(25)),
        Window::Never => None,
        Window::Implausible => Some(now() + TimeDelta::days(2)),
    }
}

/// The table's decision for `content` (the template approved).
fn table(s: &Customer, content: ContentKind) -> &'static str {
    rule_table::decision(s, content.category().as_str(), true)
}

/// The part of the table the dispatcher re-checks.
fn recheck_table(s: &Customer, content: ContentKind) -> &'static str {
    rule_table::recheck(s, content.category().as_str(), true)
}

fn input(s: &Customer, category: Category) -> ComplianceInput {
    ComplianceInput {
        category,
        opted_out_marketing: s.opt_out != OptOut::None,
        opted_out_utility: s.opt_out == OptOut::All,
        tags: s.tags.clone(),
        phone: canonicalize(if s.us {
            "+14155550100"
        } else {
            "+628123456789"
        })
        .unwrap(),
        last_inbound_at: last_inbound(s.window),
        recent_count: if s.cap_reached { 2 } else { 0 },
        now: now(),
    }
}

fn content() -> impl Strategy<Value = ContentKind> {
    prop_oneof![
        Just(ContentKind::FreeForm),
        Just(ContentKind::Template(TemplateCategory::Marketing)),
        Just(ContentKind::Template(TemplateCategory::Utility)),
        Just(ContentKind::Template(TemplateCategory::Authentication)),
    ]
}

fn label() -> impl Strategy<Value = MessageType> {
    prop_oneof![
        Just(MessageType::Marketing),
        Just(MessageType::Utility),
        Just(MessageType::Authentication),
        Just(MessageType::Service),
        Just(MessageType::Template),
    ]
}

/// check_compliance's label that describes `content` (it has no content of its own).
fn describing_label(content: ContentKind) -> MessageType {
    match content {
        ContentKind::FreeForm => MessageType::Service,
        ContentKind::Template(TemplateCategory::Marketing) => MessageType::Marketing,
        ContentKind::Template(TemplateCategory::Utility) => MessageType::Utility,
        ContentKind::Template(TemplateCategory::Authentication) => MessageType::Authentication,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4096))]

    #[test]
    fn every_way_of_asking_matches_the_rule_table(
        s in customers(),
        c in content(),
        caller_label in label(),
    ) {
        let policies = PolicySet::from_yaml(POLICIES).unwrap();
        let expected = table(&s, c);
        // A send (tool, schedule, campaign, retry): the content decides; the caller's
        // label is not an input to the decision at all.
        let _ = caller_label;
        let sent = decide(&policies, &input(&s, c.category()));
        prop_assert_eq!(sent.reason_code.as_str(), expected);
        prop_assert_eq!(sent.allowed, expected == "OK");
        // check_compliance, asked with the label that describes the content.
        let asked = decide(
            &policies,
            &input(&s, describing_label(c).described_content().category()),
        );
        prop_assert_eq!(asked.reason_code, sent.reason_code);
        prop_assert_eq!(&asked.human_explanation, &sent.human_explanation);
        // The dispatcher's last look, with the template still approved.
        let last_look = recheck(&RecheckInput {
            content: c,
            template_status: Some("APPROVED".into()),
            opted_out_marketing: s.opt_out != OptOut::None,
            opted_out_utility: s.opt_out == OptOut::All,
            last_inbound_at: last_inbound(s.window),
            now: now(),
        });
        let code = last_look.as_ref().map_or("OK", |d| d.reason_code.as_str());
        prop_assert_eq!(code, recheck_table(&s, c));
        // Where both refuse, they say the same thing.
        if let Some(d) = last_look {
            prop_assert_eq!(d.human_explanation, sent.human_explanation);
        }
    }

    #[test]
    fn a_template_that_is_not_approved_is_refused_before_anything_else(
        s in customers(),
        t in prop_oneof![
            Just(TemplateCategory::Marketing),
            Just(TemplateCategory::Utility),
            Just(TemplateCategory::Authentication)
        ],
        status in prop_oneof![Just("PAUSED"), Just("REJECTED"), Just("PENDING"), Just("DISABLED")],
    ) {
        let d = recheck(&RecheckInput {
            content: ContentKind::Template(t),
            template_status: Some(status.into()),
            opted_out_marketing: s.opt_out != OptOut::None,
            opted_out_utility: s.opt_out == OptOut::All,
            last_inbound_at: last_inbound(s.window),
            now: now(),
        })
        .expect("refused");
        prop_assert_eq!(d.reason_code.as_str(), "TEMPLATE_NOT_APPROVED");
        prop_assert!(d.human_explanation.contains(status));
    }
}

#[test]
fn free_form_needs_the_window_whatever_the_label() {
    let policies = PolicySet::from_yaml(POLICIES).unwrap();
    let s = Customer {
        window: Window::Closed,
        opt_out: OptOut::None,
        cap_reached: false,
        tags: vec![],
        us: false,
    };
    for label in [
        MessageType::Marketing,
        MessageType::Utility,
        MessageType::Service,
    ] {
        // The label never reaches the decision: free-form content is a service message.
        let _ = label;
        let d = decide(&policies, &input(&s, ContentKind::FreeForm.category()));
        assert_eq!(d.reason_code.as_str(), "TEMPLATE_REQUIRED");
    }
}

#[test]
fn an_implausible_inbound_time_opens_no_window() {
    let policies = PolicySet::from_yaml(POLICIES).unwrap();
    let s = Customer {
        window: Window::Implausible,
        opt_out: OptOut::None,
        cap_reached: false,
        tags: vec![],
        us: false,
    };
    let d = decide(&policies, &input(&s, Category::Service));
    assert_eq!(d.reason_code.as_str(), "TEMPLATE_REQUIRED");
    let mut before_2010 = input(&s, Category::Service);
    before_2010.last_inbound_at = Some(Utc.with_ymd_and_hms(2009, 12, 31, 23, 0, 0).unwrap());
    before_2010.now = Utc.with_ymd_and_hms(2010, 1, 1, 0, 0, 0).unwrap();
    assert_eq!(
        decide(&policies, &before_2010).reason_code.as_str(),
        "TEMPLATE_REQUIRED"
    );
}

#[test]
fn tag_exclusion_ignores_case() {
    let policies = PolicySet::from_yaml(&POLICIES.replace("tags: [vip]", "tags: [VIP]")).unwrap();
    let s = Customer {
        window: Window::Open,
        opt_out: OptOut::None,
        cap_reached: false,
        tags: vec!["vip".into()],
        us: false,
    };
    let d = decide(&policies, &input(&s, Category::Marketing));
    assert_eq!(d.policy_id.as_deref(), Some("test_skip_vip"));
    let upper = Customer {
        tags: vec!["VIP".into()],
        ..s
    };
    let d = decide(
        &PolicySet::from_yaml(POLICIES).unwrap(),
        &input(&upper, Category::Marketing),
    );
    assert_eq!(d.policy_id.as_deref(), Some("test_skip_vip"));
}
