//! The file format: the documented example and another file, every refusal, lenient
//! spellings and the JSON round trip.

use super::*;
use chrono::TimeDelta;
use proptest::prelude::*;

const DOCUMENTED_EXAMPLE: &str = r#"
version: 1
policies:
  - id: quiet_hours_jakarta
    type: quiet_hours            # no sends from start to end, local time; may cross midnight
    message_types: [marketing]
    start: "20:00"
    end: "08:00"
    timezone: Asia/Jakarta
  - id: marketing_cap
    type: frequency_limit        # at most `max` accepted messages per customer per rolling window
    message_types: [marketing]
    max: 2
    window: 24h
  - id: skip_vip
    type: tag_exclusion          # customers carrying any of these tags get none
    message_types: [marketing]
    tags: [vip]
  - id: no_marketing_to_us
    type: country_block          # recipients whose number starts with a prefix get none
    message_types: [marketing]
    prefixes: ["1"]
    enabled: true
"#;

/// Another file, as an end-to-end run writes one.
const ACC_MAIN: &str = r#"# Policies for an end-to-end run.
version: 1
policies:
  - id: acc_marketing_cap
    type: frequency_limit
    message_types: [marketing]
    max: 2
    window: 24h
  - id: acc_no_marketing_to_plus1
    type: country_block
    message_types: [marketing]
    prefixes: ["1"]
    enabled: true
  - id: acc_skip_no_marketing_tag
    type: tag_exclusion
    message_types: [marketing]
    tags: [acc_no_marketing]
"#;

/// policy.py: INVALID_POLICY_FILES, verbatim.
const INVALID: [(&str, &str, &str); 4] = [
    (
        "unknown-type",
        "version: 1\npolicies:\n  - id: acc_bad_policy\n    type: carrier_pigeon_limit\n    message_types: [marketing]\n    max: 3\n",
        "unknown type",
    ),
    (
        "unknown-field",
        "version: 1\npolicies:\n  - id: acc_bad_policy\n    type: tag_exclusion\n    message_types: [marketing]\n    tags: [vip]\n    favourite_colour: blue\n",
        "unknown field `favourite_colour`",
    ),
    (
        "bad-timezone",
        "version: 1\npolicies:\n  - id: acc_bad_policy\n    type: quiet_hours\n    message_types: [marketing]\n    start: \"20:00\"\n    end: \"08:00\"\n    timezone: Mars/Olympus_Mons\n",
        "unknown timezone \"Mars/Olympus_Mons\"",
    ),
    (
        "duplicate-id",
        "version: 1\npolicies:\n  - id: acc_bad_policy\n    type: tag_exclusion\n    message_types: [marketing]\n    tags: [vip]\n  - id: acc_bad_policy\n    type: country_block\n    message_types: [marketing]\n    prefixes: [\"999\"]\n",
        "duplicate id",
    ),
];

fn quiet_yaml(start: &str, end: &str) -> String {
    format!(
        "version: 1\npolicies:\n  - id: acc_quiet_now_utc\n    type: quiet_hours\n    message_types: [marketing]\n    start: \"{start}\"\n    end: \"{end}\"\n    timezone: UTC\n  - id: acc_quiet_same_clock_kathmandu\n    type: quiet_hours\n    message_types: [utility]\n    start: \"{start}\"\n    end: \"{end}\"\n    timezone: Asia/Kathmandu\n  - id: acc_quiet_disabled\n    type: quiet_hours\n    message_types: [utility]\n    start: \"{start}\"\n    end: \"{end}\"\n    timezone: UTC\n    enabled: false\n  - id: acc_block_all_types_to_7\n    type: country_block\n    prefixes: [\"7\"]\n"
    )
}

fn err(text: &str) -> PolicyError {
    PolicySet::from_yaml(text).expect_err("must be refused")
}

#[test]
fn parses_the_contract_example() {
    let set = PolicySet::from_yaml(DOCUMENTED_EXAMPLE).unwrap();
    let ids: Vec<_> = set.policies().iter().map(Policy::id).collect();
    assert_eq!(
        ids,
        [
            "quiet_hours_jakarta",
            "marketing_cap",
            "skip_vip",
            "no_marketing_to_us"
        ]
    );
    let q = match set.policies()[0].rule() {
        Rule::QuietHours(q) => q.clone(),
        other => panic!("{other:?}"),
    };
    assert_eq!(q.describe(), "20:00-08:00 Asia/Jakarta");
    assert!(set.policies().iter().all(Policy::enabled));
    assert_eq!(
        set.policies()[0].message_types(),
        Some(&[Category::Marketing][..])
    );
    assert!(set.warnings().is_empty(), "{:?}", set.warnings());
}

#[test]
fn parses_the_acceptance_main_file() {
    let set = PolicySet::from_yaml(ACC_MAIN).unwrap();
    assert_eq!(set.len(), 3);
    let cap = set.frequency_limit(Category::Marketing).unwrap();
    assert_eq!(cap.policy_id.as_deref(), Some("acc_marketing_cap"));
    assert_eq!(cap.max, 2);
    assert_eq!(cap.window, TimeDelta::hours(24));
    assert_eq!(set.frequency_limit(Category::Utility), None);
    assert_eq!(set.frequency_limit(Category::Service), None);
}

#[test]
fn parses_the_acceptance_quiet_hours_file() {
    let set = PolicySet::from_yaml(&quiet_yaml("23:30", "01:30")).unwrap();
    assert_eq!(set.len(), 4);
    assert!(!set.get("acc_quiet_disabled").unwrap().enabled());
    let all = set.get("acc_block_all_types_to_7").unwrap();
    assert_eq!(all.message_types(), None);
    for c in Category::ALL {
        assert!(all.is_active_for(c));
    }
}

#[test]
fn every_invalid_acceptance_file_names_the_policy_and_reason() {
    for (name, text, reason) in INVALID {
        let e = err(text);
        let line = e.to_string();
        assert_eq!(e.policy_id(), Some("acc_bad_policy"), "{name}: {line}");
        assert!(line.contains("acc_bad_policy"), "{name}: {line}");
        assert!(line.contains(reason), "{name}: {line}");
        assert!(!line.contains('\n'), "{name}: {line}");
    }
}

#[test]
fn invalid_yaml_reports_line_and_column() {
    // policy.py: invalid_policy_yaml()
    let e = err("version: 1\npolicies: [\n  - id: broken\n    type: frequency_limit\n");
    let line = e.to_string();
    assert!(
        matches!(
            e,
            PolicyError::Syntax {
                location: Some(_),
                ..
            }
        ),
        "{e:?}"
    );
    assert!(
        line.starts_with("policy file is not valid YAML at line "),
        "{line}"
    );
    assert!(!line.contains('\n'), "{line}");
}

#[test]
fn file_level_errors() {
    assert!(err("").to_string().contains("empty"));
    assert!(err("# only a comment\n").to_string().contains("empty"));
    assert!(err("- a\n- b\n").to_string().contains("top level"));
    assert!(
        err("policies: []\n")
            .to_string()
            .contains("missing `version")
    );
    assert!(
        err("version: 2\npolicies: []\n")
            .to_string()
            .contains("unsupported version 2")
    );
    assert!(
        err("version: 1\n")
            .to_string()
            .contains("missing `policies`")
    );
    assert!(
        err("version: 1\npolicies: {}\n")
            .to_string()
            .contains("must be a list")
    );
    let e = err("version: 1\npolicies: []\nextra: 1\n").to_string();
    assert!(e.contains("unknown field `extra`"), "{e}");
    assert!(
        PolicySet::from_yaml("version: 1\npolicies: []\n")
            .unwrap()
            .is_empty()
    );
}

#[test]
fn policy_level_errors() {
    let wrap = |body: &str| format!("version: 1\npolicies:\n  - {body}\n");
    let cases = [
        (
            "type: tag_exclusion\n    tags: [vip]",
            "policy #1 (no id): missing `id`",
        ),
        (
            "id: 7\n    type: tag_exclusion\n    tags: [a]",
            "`id` must be text",
        ),
        (
            "id: \"\"\n    type: tag_exclusion\n    tags: [a]",
            "`id` is empty",
        ),
        ("id: a\n    tags: [vip]", "missing `type`"),
        (
            "id: a\n    type: TAG_EXCLUSION\n    tags: [vip]",
            "unknown type",
        ),
        ("id: a\n    type: tag_exclusion", "missing `tags`"),
        (
            "id: a\n    type: tag_exclusion\n    tags: []",
            "`tags` must not be empty",
        ),
        (
            "id: a\n    type: tag_exclusion\n    tags: vip",
            "`tags` must be a list",
        ),
        (
            "id: a\n    type: tag_exclusion\n    tags: [vip]\n    max: 3",
            "field `max` belongs to type frequency_limit, not tag_exclusion",
        ),
        (
            "id: a\n    type: tag_exclusion\n    tags: [vip]\n    enabled: maybe",
            "`enabled` must be true or false",
        ),
        (
            "id: a\n    type: tag_exclusion\n    tags: [vip]\n    message_types: [promo]",
            "unknown category \"promo\"",
        ),
        (
            "id: a\n    type: tag_exclusion\n    tags: [vip]\n    message_types: [template]",
            "template",
        ),
        (
            "id: a\n    type: tag_exclusion\n    tags: [vip]\n    message_types: []",
            "must not be empty",
        ),
        ("id: a\n    type: frequency_limit", "missing `max`"),
        (
            "id: a\n    type: frequency_limit\n    max: 0",
            "`max` must be a whole number of at least 1",
        ),
        (
            "id: a\n    type: frequency_limit\n    max: -1",
            "`max` must be",
        ),
        (
            "id: a\n    type: frequency_limit\n    max: 2.5",
            "`max` must be",
        ),
        (
            "id: a\n    type: frequency_limit\n    max: two",
            "`max` must be",
        ),
        (
            "id: a\n    type: frequency_limit\n    max: 2\n    window: 24",
            "`window` must be a duration",
        ),
        (
            "id: a\n    type: frequency_limit\n    max: 2\n    window: 1w",
            "`window` must be a duration",
        ),
        (
            "id: a\n    type: frequency_limit\n    max: 2\n    window: 0h",
            "`window` must be a duration",
        ),
        (
            "id: a\n    type: frequency_limit\n    max: 2\n    window: 400d",
            "`window` must be a duration",
        ),
        (
            "id: a\n    type: quiet_hours\n    end: \"08:00\"\n    timezone: UTC",
            "missing `start`",
        ),
        (
            "id: a\n    type: quiet_hours\n    start: \"20:00\"\n    end: \"08:00\"",
            "missing `timezone`",
        ),
        (
            "id: a\n    type: quiet_hours\n    start: \"25:00\"\n    end: \"08:00\"\n    timezone: UTC",
            "`start` must be a time HH:MM",
        ),
        (
            "id: a\n    type: quiet_hours\n    start: \"20:60\"\n    end: \"08:00\"\n    timezone: UTC",
            "`start` must be a time",
        ),
        (
            "id: a\n    type: quiet_hours\n    start: \"20:00\"\n    end: \"8\"\n    timezone: UTC",
            "`end` must be a time",
        ),
        (
            "id: a\n    type: quiet_hours\n    start: \"24:00\"\n    end: \"08:00\"\n    timezone: UTC",
            "`start` must be a time",
        ),
        (
            "id: a\n    type: quiet_hours\n    start: \"20:00\"\n    end: \"08:00\"\n    timezone: asia/jakarta",
            "unknown timezone",
        ),
        (
            "id: a\n    type: quiet_hours\n    start: 1200\n    end: \"08:00\"\n    timezone: UTC",
            "`start` must be quoted text",
        ),
        (
            "id: a\n    type: country_block\n    prefixes: [\"0\"]",
            "without a leading 0",
        ),
        (
            "id: a\n    type: country_block\n    prefixes: [\"1a\"]",
            "`prefixes` entry \"1a\"",
        ),
        (
            "id: a\n    type: country_block\n    prefixes: [\"\"]",
            "empty entry",
        ),
    ];
    for (body, expected) in cases {
        let e = err(&wrap(body)).to_string();
        assert!(
            e.contains(expected),
            "{body:?}\n  got: {e}\n  want: {expected}"
        );
        assert!(!e.contains('\n'), "{e}");
    }
    assert!(PolicySet::from_yaml(&wrap("id: a\n    type: tag_exclusion\n    tags: [vip]")).is_ok());
}

#[test]
fn lenient_spellings_that_are_still_unambiguous() {
    let set = PolicySet::from_yaml(
        "version: 1\npolicies:\n  - id: a\n    type: country_block\n    prefixes: [1, \"+44\", \"1\"]\n    message_types: [MARKETING, Text]\n  - id: b\n    type: quiet_hours\n    start: \"8:00\"\n    end: \"24:00\"\n    timezone: Europe/London\n  - id: c\n    type: frequency_limit\n    max: 5\n",
    )
    .unwrap();
    match set.get("a").unwrap().rule() {
        Rule::CountryBlock { prefixes } => assert_eq!(prefixes, &["1", "44"]),
        other => panic!("{other:?}"),
    }
    assert_eq!(
        set.get("a").unwrap().message_types(),
        Some(&[Category::Marketing, Category::Service][..])
    );
    match set.get("b").unwrap().rule() {
        Rule::QuietHours(q) => {
            assert_eq!((q.start(), q.end()), ("08:00".into(), "24:00".into()));
            assert!(q.contains_minute(23 * 60 + 59));
            assert!(!q.contains_minute(7 * 60 + 59));
        }
        other => panic!("{other:?}"),
    }
    // window defaults to 24h; the cap applies to every category.
    for c in Category::ALL {
        let l = set.frequency_limit(c).unwrap();
        assert_eq!(
            (l.policy_id.as_deref(), l.max, l.window_label().as_str()),
            (Some("c"), 5, "24h")
        );
    }
}

#[test]
fn json_round_trip() {
    let set = PolicySet::from_yaml(DOCUMENTED_EXAMPLE).unwrap();
    let json = set.to_json();
    assert_eq!(serde_json::to_value(&set.policies()[1]).unwrap(), json[1]);
    assert_eq!(json[0]["type"], "quiet_hours");
    assert_eq!(json[0]["timezone"], "Asia/Jakarta");
    assert_eq!(json[1]["window"], "24h");
    assert_eq!(json[1]["max"], 2);
    assert_eq!(json[3]["prefixes"][0], "1");
    let back: Vec<Policy> = json
        .as_array()
        .unwrap()
        .iter()
        .map(|v| Policy::from_json(v).unwrap())
        .collect();
    assert_eq!(PolicySet::from_policies(back).unwrap(), set);
    let all = PolicySet::from_yaml(&quiet_yaml("01:00", "02:00")).unwrap();
    let j = all.get("acc_block_all_types_to_7").unwrap().to_json();
    assert!(j.get("message_types").is_none());
    assert_eq!(
        Policy::from_json(&j).unwrap(),
        *all.get("acc_block_all_types_to_7").unwrap()
    );
    assert!(Policy::from_json(&serde_json::json!({"id": "x", "type": "nope"})).is_err());
}

proptest! {
    #[test]
    fn parser_never_panics_on_any_text(text in "\\PC{0,300}") {
        let _ = PolicySet::from_yaml(&text);
    }

    #[test]
    fn parser_never_panics_on_policy_shaped_yaml(
        id in "[a-z_]{0,8}",
        kind in prop::sample::select(vec!["quiet_hours", "frequency_limit", "tag_exclusion", "country_block", "x"]),
        key in prop::sample::select(vec!["start", "end", "timezone", "max", "window", "tags", "prefixes", "message_types", "enabled", "other"]),
        value in prop::sample::select(vec!["\"20:00\"", "[1, a]", "[]", "24h", "-3", "UTC", "true", "null", "{a: 1}", "\"\"", "99999999999999999999"]),
    ) {
        let text = format!("version: 1\npolicies:\n  - id: {id}\n    type: {kind}\n    {key}: {value}\n");
        if let Err(e) = PolicySet::from_yaml(&text) {
            prop_assert!(!e.to_string().contains('\n'));
        }
    }
}
