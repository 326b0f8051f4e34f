use std::collections::HashMap;

use proptest::prelude::*;

use super::*;

const EXAMPLE: &str = include_str!("../../../../examples/senders.yaml");

fn env_of(pairs: &[(&str, &str)]) -> HashMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn example_env() -> HashMap<String, String> {
    env_of(&[
        ("SENDER_A1_TOKEN", "tok-a1-secret"),
        ("SENDER_A2_TOKEN", "tok-a2-secret"),
        ("SENDER_B1_TOKEN", "tok-b1-secret"),
        ("SENDER_A_APP_SECRET", "app-a-secret"),
        ("SENDER_B_APP_SECRET", "app-b-secret"),
    ])
}

fn parse_with(text: &str, env: &HashMap<String, String>) -> Result<Senders, Vec<SenderProblem>> {
    Senders::from_yaml(text, &|name| env.get(name).cloned())
}

/// (line, field) of each problem.
fn places(problems: &[SenderProblem]) -> Vec<(usize, &str)> {
    problems
        .iter()
        .map(|p| (p.line, p.field.as_str()))
        .collect()
}

#[test]
fn the_example_file_is_three_numbers_of_two_businesses() {
    let senders = parse_with(EXAMPLE, &example_env()).unwrap();
    assert_eq!(senders.ids(), ["a1", "a2", "b1"]);
    assert_eq!(senders.len(), 3);
    assert!(!senders.is_empty());
    assert_eq!(senders.default().id, "a1");
    assert_eq!(senders.summary(), "3 senders (a1, a2, b1), default a1");

    let a2 = senders.get("a2").unwrap();
    assert_eq!(a2.phone_number_id, "104000000000002");
    assert_eq!(a2.access_token.expose(), "tok-a2-secret");
    assert_eq!(a2.access_token_env, "SENDER_A2_TOKEN");
    assert_eq!(
        a2.app_secret.as_ref().map(Secret::expose),
        Some("app-a-secret")
    );
    assert_eq!(a2.mps, None);
    assert!(!a2.default);
    assert_eq!(senders.get("a1").unwrap().mps, Some(80));

    // By id or by number.
    assert_eq!(senders.get("104000000000003").unwrap().id, "b1");
    assert_eq!(
        senders.by_phone_number_id("104000000000003").unwrap().id,
        "b1"
    );
    assert!(senders.by_phone_number_id("b1").is_none());
    assert!(senders.by_id("104000000000003").is_none());
    assert!(senders.get("c1").is_none());

    assert!(senders.same_business("a1", "a2"));
    assert!(senders.same_business("a1", "104000000000002"));
    assert!(!senders.same_business("a1", "b1"));
    assert!(!senders.same_business("a1", "nope"));
    let groups = senders.by_business();
    assert_eq!(groups.len(), 2);
    let ids = |group: &[&Sender]| group.iter().map(|s| s.id.clone()).collect::<Vec<_>>();
    assert_eq!(ids(&groups["204000000000001"]), ["a1", "a2"]);
    assert_eq!(ids(&groups["204000000000002"]), ["b1"]);
    assert_eq!(
        senders
            .of_business("204000000000001")
            .map(|s| s.id.as_str())
            .collect::<Vec<_>>(),
        ["a1", "a2"]
    );
    assert_eq!(senders.all().len(), 3);
}

#[test]
fn debug_never_shows_a_secret() {
    let senders = parse_with(EXAMPLE, &example_env()).unwrap();
    for text in [format!("{senders:?}"), format!("{senders:#?}")] {
        for (_, secret) in example_env() {
            assert!(!text.contains(&secret), "{secret} in {text}");
        }
        assert!(text.contains("SENDER_A1_TOKEN"), "{text}");
        assert!(text.contains(crate::REDACTED), "{text}");
    }
}

#[test]
fn single_default_is_todays_platform_settings() {
    let settings =
        crate::Settings::from_sources(None, &env_of(&[("PLATFORM_ACCESS_TOKEN", "tok-9")]))
            .unwrap();
    let senders = Senders::single_default(&settings.platform);
    assert_eq!(senders.ids(), [DEFAULT_SENDER_ID]);
    let s = senders.default();
    assert_eq!(s.id, "default");
    assert!(s.default);
    assert_eq!(s.phone_number_id, settings.platform.phone_number_id);
    assert_eq!(s.waba_id, settings.platform.account_id);
    assert_eq!(s.portfolio_id, DEFAULT_PORTFOLIO_ID);
    assert_eq!(s.access_token.expose(), "tok-9");
    assert_eq!(s.access_token_env, "PLATFORM_ACCESS_TOKEN");
    assert_eq!(s.app_secret, None);
    assert_eq!(s.mps, None);
    assert_eq!(
        senders.get(&settings.platform.phone_number_id).unwrap().id,
        "default"
    );
    assert!(!format!("{senders:?}").contains("tok-9"));
}

#[test]
fn every_problem_is_reported_at_once_with_its_line_and_field() {
    let text = "\
version: 1
senders:
  - id: A1
    phone_number_id: \"1\"
    waba_id: \"2\"
    portfolio_id: \"3\"
    access_token_env: UNSET_TOKEN
    app_secret_env: EMPTY_SECRET
    mps: 0
    default: true
    colour: blue
  - id: b1
    phone_number_id: \"1\"
    waba_id: \"2\"
    portfolio_id: \"4\"
    access_token_env: TOKEN
    app_secret_env: SECRET
    mps: 5000
    default: true
  - id: b1
    phone_number_id: \"9\"
    portfolio_id: \"3\"
    access_token_env: TOKEN
    app_secret_env: SECRET
";
    let env = env_of(&[
        ("EMPTY_SECRET", " "),
        ("TOKEN", "t0k3n"),
        ("SECRET", "s3cr3t"),
    ]);
    let problems = parse_with(text, &env).unwrap_err();
    assert_eq!(
        places(&problems),
        [
            (3, "senders[0].id"),
            (7, "senders[0].access_token_env"),
            (8, "senders[0].app_secret_env"),
            (9, "senders[0].mps"),
            (11, "senders[0].colour"),
            (13, "senders[1].phone_number_id"),
            (15, "senders[1].portfolio_id"),
            (18, "senders[1].mps"),
            (19, "senders[1].default"),
            (20, "senders[2].waba_id"),
            (20, "senders[2].id"),
        ],
        "{problems:#?}"
    );
    let text_of = |field: &str| {
        problems
            .iter()
            .find(|p| p.field == field)
            .unwrap()
            .to_string()
    };
    assert_eq!(
        text_of("senders[0].id"),
        "line 3: senders[0].id: `A1` is not an id: 1 to 32 of a-z, 0-9, `_`, `-`"
    );
    assert_eq!(
        text_of("senders[0].access_token_env"),
        "line 7: senders[0].access_token_env: `UNSET_TOKEN` is not set"
    );
    assert_eq!(
        text_of("senders[0].app_secret_env"),
        "line 8: senders[0].app_secret_env: `EMPTY_SECRET` is empty"
    );
    assert!(text_of("senders[1].phone_number_id").contains("senders[0] (line 3)"));
    assert!(text_of("senders[1].portfolio_id").contains("waba_id `2` is in portfolio `3`"));
    assert!(text_of("senders[1].default").contains("a second default"));
    assert!(text_of("senders[2].id").contains("`b1` is already the id of senders[1] (line 12)"));
    assert!(text_of("senders[2].waba_id").contains("missing"));
    for p in &problems {
        let line = p.to_string();
        assert!(
            !line.contains("t0k3n") && !line.contains("s3cr3t"),
            "{line}"
        );
        assert!(!line.contains('\n'), "{line}");
    }
}

#[test]
fn file_level_problems() {
    let env = example_env();
    let one = |text: &str| {
        let problems = parse_with(text, &env).unwrap_err();
        assert_eq!(problems.len(), 1, "{problems:#?}");
        problems.into_iter().next().unwrap()
    };
    let p = one("");
    assert_eq!((p.line, p.field.as_str()), (1, "file"));
    let p = one("- a\n- b\n");
    assert_eq!((p.line, p.field.as_str()), (1, "file"));
    let p = one("version: 1\n");
    assert_eq!((p.line, p.field.as_str()), (1, "senders"));
    let p = one("version: 1\nsenders: []\n");
    assert_eq!((p.line, p.field.as_str()), (2, "senders"));
    let p = one("version: 1\nsenders:\n  a: 1\n");
    assert_eq!((p.line, p.field.as_str()), (3, "senders"));
    assert!(p.reason.contains("a list"), "{p}");
    let problems = parse_with("version: 1\nsenders:\n  - id: a\n  - [x]\n", &env).unwrap_err();
    assert!(
        places(&problems).contains(&(4, "senders[1]")),
        "{problems:#?}"
    );

    // Syntax: the parser's line, its message without the repeat.
    let p = one("version: 1\nsenders:\n  - id: a1\n   bad: [\n");
    assert_eq!(p.field, "yaml");
    assert!(p.line >= 3, "{p}");

    // Version: missing, or not 1; the rest is still checked.
    let body = EXAMPLE.replace("version: 1\n", "");
    let problems = parse_with(&body, &env).unwrap_err();
    assert_eq!(places(&problems), [(1, "version")]);
    let body = EXAMPLE.replace("version: 1\n", "version: 2\n");
    let problems = parse_with(&body, &env).unwrap_err();
    assert_eq!(places(&problems), [(5, "version")]);
    assert!(problems[0].reason.contains("`2`"), "{problems:?}");

    // Unknown top-level field.
    let problems = parse_with(&format!("{EXAMPLE}extra: 1\n"), &env).unwrap_err();
    let last = EXAMPLE.lines().count() + 1;
    assert_eq!(places(&problems), [(last, "extra")]);
}

#[test]
fn defaults_none_or_several() {
    let env = example_env();
    let none = EXAMPLE.replace("    default: true ", "    default: false");
    let problems = parse_with(&none, &env).unwrap_err();
    assert_eq!(places(&problems), [(6, "default")], "{problems:#?}");
    let two = EXAMPLE.replace(
        "    app_secret_env: SENDER_B_APP_SECRET\n",
        "    app_secret_env: SENDER_B_APP_SECRET\n    default: true\n",
    );
    let problems = parse_with(&two, &env).unwrap_err();
    assert_eq!(
        places(&problems),
        [(30, "senders[2].default")],
        "{problems:#?}"
    );
    assert!(
        problems[0].reason.contains("senders[0] at line 7"),
        "{problems:#?}"
    );
    let not_bool = EXAMPLE.replace("default: true ", "default: yes  ");
    let problems = parse_with(&not_bool, &env).unwrap_err();
    assert_eq!(
        places(&problems),
        [(6, "default"), (14, "senders[0].default")],
        "{problems:#?}"
    );
}

#[test]
fn mps_must_be_a_sensible_whole_number() {
    let env = example_env();
    for (mps, ok) in [
        ("1", true),
        ("1000", true),
        ("~", true),
        ("0", false),
        ("1001", false),
        ("99999999999", false),
        ("-3", false),
        ("1.5", false),
        ("fast", false),
        ("[1]", false),
    ] {
        let text = EXAMPLE.replace("mps: 80", &format!("mps: {mps}"));
        match parse_with(&text, &env) {
            Ok(s) => assert!(ok, "{mps} accepted: {s:?}"),
            Err(problems) => {
                assert!(!ok, "{mps} refused: {problems:?}");
                assert_eq!(places(&problems), [(13, "senders[0].mps")], "{mps}");
            }
        }
    }
}

#[test]
fn a_secret_written_in_the_file_is_refused_and_never_echoed() {
    let env = example_env();
    let text = EXAMPLE.replace(
        "access_token_env: SENDER_A2_TOKEN",
        "access_token_env: EAAGm0PX4ZCpsBAzxSecretValue",
    );
    let problems = parse_with(&text, &env).unwrap_err();
    assert_eq!(places(&problems), [(20, "senders[1].access_token_env")]);
    assert!(!problems[0].to_string().contains("EAAG"), "{problems:?}");
    assert!(
        problems[0].reason.contains("never the secret"),
        "{problems:?}"
    );

    let text = EXAMPLE.replace(
        "access_token_env: SENDER_A2_TOKEN",
        "access_token: EAAGm0PX4ZCpsBAzxSecretValue",
    );
    let problems = parse_with(&text, &env).unwrap_err();
    assert_eq!(
        places(&problems),
        [
            (16, "senders[1].access_token_env"),
            (20, "senders[1].access_token")
        ],
        "{problems:#?}"
    );
    for p in &problems {
        assert!(!p.to_string().contains("EAAG"), "{p}");
    }
    assert!(
        problems[1].reason.contains("access_token_env"),
        "{problems:?}"
    );
}

#[test]
fn an_id_may_not_be_another_senders_number() {
    let text = EXAMPLE.replace("id: b1", "id: \"104000000000001\"");
    let problems = parse_with(&text, &example_env()).unwrap_err();
    assert_eq!(places(&problems), [(24, "senders[2].id")], "{problems:#?}");
    // Its own number is fine: `get` finds the same sender either way.
    let text = EXAMPLE.replace("id: b1", "id: \"104000000000003\"");
    let senders = parse_with(&text, &example_env()).unwrap();
    assert_eq!(
        senders.get("104000000000003").unwrap().waba_id,
        "204000000000002"
    );
}

#[test]
fn flow_style_and_unquoted_numbers() {
    let text = "version: 1\nsenders: [\n  {id: x, phone_number_id: 123, waba_id: 456, portfolio_id: 789,\n   access_token_env: T, app_secret_env: S, default: true},\n  {id: y, phone_number_id: 123, waba_id: 456, portfolio_id: 789,\n   access_token_env: T, app_secret_env: S, mps: 0}]\n";
    let env = env_of(&[("T", "t"), ("S", "s")]);
    let problems = parse_with(text, &env).unwrap_err();
    assert_eq!(
        places(&problems),
        [(5, "senders[1].phone_number_id"), (6, "senders[1].mps")],
        "{problems:#?}"
    );
    let ok = text.replace("phone_number_id: 123, waba_id: 456, portfolio_id: 789,\n   access_token_env: T, app_secret_env: S, mps: 0", "phone_number_id: 124, waba_id: 456, portfolio_id: 789,\n   access_token_env: T, app_secret_env: S, mps: 10");
    let senders = parse_with(&ok, &env).unwrap();
    assert_eq!(senders.get("124").unwrap().id, "y");
    assert_eq!(senders.default().phone_number_id, "123");
}

#[test]
fn load_names_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("senders.yaml");
    let err = Senders::load(&path, &|_| None).unwrap_err();
    assert!(matches!(err, SendersError::Read { .. }));
    assert!(err.to_string().starts_with("cannot read "), "{err}");
    std::fs::write(&path, EXAMPLE).unwrap();
    let err = Senders::load(&path, &|_| None).unwrap_err();
    let lines = err.lines();
    assert_eq!(lines.len(), 6, "{lines:#?}");
    assert!(
        lines[0].starts_with(&format!(
            "{}: line 11: senders[0].access_token_env: `SENDER_A1_TOKEN` is not set",
            path.display()
        )),
        "{lines:#?}"
    );
    let env = example_env();
    let senders = Senders::load(&path, &|name| env.get(name).cloned()).unwrap();
    assert_eq!(senders.len(), 3);
}

// --- Properties -----------------------------------------------------------------------

/// One sender of a generated file.
#[derive(Clone, Debug)]
struct Spec {
    id: String,
    number: u64,
    quote_number: bool,
    business: u8,
    mps: Option<u32>,
    explicit_not_default: bool,
    order: Vec<usize>,
    blank_before: bool,
}

/// The fields a rendered entry has (`default` only when it is true or written false).
fn rendered_fields(spec: &Spec, default: bool) -> Vec<&'static str> {
    let mut out = vec![
        "id",
        "phone_number_id",
        "waba_id",
        "portfolio_id",
        "access_token_env",
        "app_secret_env",
    ];
    if spec.mps.is_some() {
        out.push("mps");
    }
    if default || spec.explicit_not_default {
        out.push("default");
    }
    out
}

fn waba_of(business: u8) -> String {
    format!("20000000000000{business}")
}

/// Businesses 0 and 1 share portfolio 0; 2 has its own.
fn portfolio_of(business: u8) -> String {
    format!("30000000000000{}", business / 2)
}

fn token_var(index: usize) -> String {
    format!("SENDER_{index}_TOKEN")
}

fn secret_var(business: u8) -> String {
    format!("BUSINESS_{business}_APP_SECRET")
}

fn spec_strategy(index: usize) -> impl Strategy<Value = Spec> {
    (
        "[a-z][a-z0-9_-]{0,20}",
        0u64..1_000_000,
        any::<bool>(),
        0u8..3,
        proptest::option::of(1u32..=MAX_MPS),
        any::<bool>(),
        Just((0..8).collect::<Vec<usize>>()).prop_shuffle(),
        any::<bool>(),
    )
        .prop_map(
            move |(prefix, number, quote_number, business, mps, explicit, order, blank)| Spec {
                id: format!("{prefix}{index}"),
                number: 100_000_000_000_000 + number * 10 + index as u64,
                quote_number,
                business,
                mps,
                explicit_not_default: explicit,
                order,
                blank_before: blank,
            },
        )
}

/// A valid file's senders and which one is the default.
fn file_strategy() -> impl Strategy<Value = (Vec<Spec>, usize)> {
    (1usize..=5)
        .prop_flat_map(|n| {
            let specs: Vec<_> = (0..n).map(spec_strategy).collect();
            (specs, 0..n)
        })
        .prop_filter("numbers are unique", |(specs, _)| {
            let mut numbers: Vec<u64> = specs.iter().map(|s| s.number).collect();
            numbers.sort_unstable();
            numbers.dedup();
            numbers.len() == specs.len()
        })
}

/// A field's value as written in the file.
fn value_text(spec: &Spec, index: usize, field: &str, default: bool) -> String {
    match field {
        "id" => spec.id.clone(),
        "phone_number_id" if spec.quote_number => format!("\"{}\"", spec.number),
        "phone_number_id" => spec.number.to_string(),
        "waba_id" => format!("'{}'", waba_of(spec.business)),
        "portfolio_id" => portfolio_of(spec.business),
        "access_token_env" => token_var(index),
        "app_secret_env" => secret_var(spec.business),
        "mps" => spec.mps.map_or("~".into(), |m| m.to_string()),
        "default" => default.to_string(),
        other => unreachable!("{other}"),
    }
}

/// Changes entry `index`'s (field, value) pairs.
type Edit<'a> = dyn Fn(usize, &mut Vec<(String, String)>) + 'a;

/// A rendered file: its text, and the line of each (entry, field) and of each entry.
struct Rendered {
    text: String,
    lines: HashMap<(usize, String), usize>,
    entry_lines: Vec<usize>,
    senders_line: usize,
}

/// Block style, each entry's fields in its own order, blank lines and comments between.
/// `edit` may change an entry's (field, value) lines before they are written.
fn render(specs: &[Spec], default: usize, edit: &Edit) -> Rendered {
    let mut out = vec![
        "# generated".to_string(),
        "version: 1".into(),
        "senders:".into(),
    ];
    let senders_line = 3;
    let mut lines = HashMap::new();
    let mut entry_lines = Vec::new();
    for (index, spec) in specs.iter().enumerate() {
        if spec.blank_before {
            out.push(String::new());
            out.push("  # next".into());
        }
        let fields = rendered_fields(spec, index == default);
        let mut pairs: Vec<(String, String)> = spec
            .order
            .iter()
            .filter_map(|&k| {
                let all = [
                    "id",
                    "phone_number_id",
                    "waba_id",
                    "portfolio_id",
                    "access_token_env",
                    "app_secret_env",
                    "mps",
                    "default",
                ];
                let field = all[k];
                fields.contains(&field).then(|| {
                    (
                        field.to_string(),
                        value_text(spec, index, field, index == default),
                    )
                })
            })
            .collect();
        edit(index, &mut pairs);
        entry_lines.push(out.len() + 1);
        for (n, (field, value)) in pairs.into_iter().enumerate() {
            let dash = if n == 0 { "  - " } else { "    " };
            out.push(format!("{dash}{field}: {value}"));
            lines.insert((index, field), out.len());
        }
    }
    let mut text = out.join("\n");
    text.push('\n');
    Rendered {
        text,
        lines,
        entry_lines,
        senders_line,
    }
}

fn env_for(specs: &[Spec], secret: &str) -> HashMap<String, String> {
    let mut env = HashMap::new();
    for (index, spec) in specs.iter().enumerate() {
        env.insert(token_var(index), format!("{secret}-tok-{index}"));
        env.insert(
            secret_var(spec.business),
            format!("{secret}-app-{}", spec.business),
        );
    }
    env
}

fn expected(specs: &[Spec], default: usize, env: &HashMap<String, String>) -> Senders {
    let list = specs
        .iter()
        .enumerate()
        .map(|(index, spec)| Sender {
            id: spec.id.clone(),
            phone_number_id: spec.number.to_string(),
            waba_id: waba_of(spec.business),
            portfolio_id: portfolio_of(spec.business),
            access_token: Secret::new(env[&token_var(index)].clone()),
            app_secret: Some(Secret::new(env[&secret_var(spec.business)].clone())),
            access_token_env: token_var(index),
            app_secret_env: secret_var(spec.business),
            mps: spec.mps,
            default: index == default,
            marketing_messages: false,
            marketing_product_policy: ProductPolicy::default(),
        })
        .collect();
    Senders { list, default }
}

/// One mistake made in a valid file.
#[derive(Clone, Copy, Debug)]
enum Corruption {
    BadId,
    DuplicateId,
    DuplicateNumber,
    UnsetVariable,
    EmptyVariable,
    SecretInsteadOfName,
    MpsZero,
    MpsAbsurd,
    UnknownField,
    MissingField,
    SecondDefault,
    NoDefault,
    Version,
    OtherPortfolio,
}

fn corruption_strategy() -> impl Strategy<Value = Corruption> {
    prop_oneof![
        Just(Corruption::BadId),
        Just(Corruption::DuplicateId),
        Just(Corruption::DuplicateNumber),
        Just(Corruption::UnsetVariable),
        Just(Corruption::EmptyVariable),
        Just(Corruption::SecretInsteadOfName),
        Just(Corruption::MpsZero),
        Just(Corruption::MpsAbsurd),
        Just(Corruption::UnknownField),
        Just(Corruption::MissingField),
        Just(Corruption::SecondDefault),
        Just(Corruption::NoDefault),
        Just(Corruption::Version),
        Just(Corruption::OtherPortfolio),
    ]
}

fn set(pairs: &mut Vec<(String, String)>, field: &str, value: String) {
    match pairs.iter_mut().find(|(f, _)| f == field) {
        Some(pair) => pair.1 = value,
        None => pairs.push((field.to_string(), value)),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn valid_files_round_trip((specs, default) in file_strategy(), secret in "Q[A-Za-z0-9]{8,24}") {
        let rendered = render(&specs, default, &|_, _| {});
        let env = env_for(&specs, &secret);
        let senders = parse_with(&rendered.text, &env)
            .map_err(|p| TestCaseError::fail(format!("{p:#?}\n{}", rendered.text)))?;
        prop_assert_eq!(&senders, &expected(&specs, default, &env));
        prop_assert_eq!(senders.default().id.as_str(), specs[default].id.as_str());
        for (index, spec) in specs.iter().enumerate() {
            prop_assert_eq!(senders.get(&spec.id).map(|s| &s.id), Some(&spec.id));
            let number = spec.number.to_string();
            prop_assert_eq!(senders.get(&number).map(|s| &s.id), Some(&spec.id));
            for (other, theirs) in specs.iter().enumerate() {
                prop_assert_eq!(
                    senders.same_business(&spec.id, &theirs.id),
                    spec.business == theirs.business,
                    "{} {}", index, other
                );
            }
        }
        let debug = format!("{senders:?}");
        prop_assert!(!debug.contains(&secret), "{}", debug);
    }

    #[test]
    fn any_single_corruption_is_reported_at_its_line_and_field(
        (specs, default) in file_strategy(),
        corruption in corruption_strategy(),
        pick in any::<prop::sample::Index>(),
        secret in "Q[A-Za-z0-9]{8,24}",
    ) {
        let n = specs.len();
        let mut env = env_for(&specs, &secret);
        let needs_two = matches!(
            corruption,
            Corruption::DuplicateId
                | Corruption::DuplicateNumber
                | Corruption::SecondDefault
                | Corruption::OtherPortfolio
        );
        prop_assume!(!needs_two || n >= 2);
        // The entry corrupted: not the first when it must repeat the first's value, not the
        // default when it becomes a second one.
        let target = match corruption {
            Corruption::DuplicateId | Corruption::DuplicateNumber | Corruption::OtherPortfolio => {
                1 + pick.index(n - 1)
            }
            Corruption::SecondDefault => {
                let others: Vec<usize> = (0..n).filter(|&i| i != default).collect();
                others[pick.index(others.len())]
            }
            Corruption::NoDefault => default,
            _ => pick.index(n),
        };
        let first = specs[0].clone();
        let edit = |index: usize, pairs: &mut Vec<(String, String)>| {
            if index != target {
                return;
            }
            match corruption {
                Corruption::BadId => set(pairs, "id", "Not An Id".into()),
                Corruption::DuplicateId => set(pairs, "id", first.id.clone()),
                Corruption::DuplicateNumber => set(pairs, "phone_number_id", first.number.to_string()),
                Corruption::UnsetVariable => set(pairs, "access_token_env", "NOT_SET_ANYWHERE".into()),
                Corruption::EmptyVariable => set(pairs, "app_secret_env", "EMPTY_ONE".into()),
                Corruption::SecretInsteadOfName => {
                    set(pairs, "access_token_env", format!("EAAGx{}", secret))
                }
                Corruption::MpsZero => set(pairs, "mps", "0".into()),
                Corruption::MpsAbsurd => set(pairs, "mps", "250000".into()),
                Corruption::UnknownField => set(pairs, "colour", "blue".into()),
                Corruption::MissingField => pairs.retain(|(f, _)| f != "waba_id"),
                Corruption::SecondDefault | Corruption::NoDefault => {
                    set(pairs, "default", (corruption_is_second(&corruption)).to_string())
                }
                Corruption::Version => {}
                Corruption::OtherPortfolio => {
                    set(pairs, "waba_id", waba_of(first.business));
                    set(pairs, "portfolio_id", "399999999999999".into());
                }
            }
        };
        env.insert("EMPTY_ONE".into(), String::new());
        let mut rendered = render(&specs, default, &edit);
        if matches!(corruption, Corruption::Version) {
            rendered.text = rendered.text.replace("version: 1\n", "version: 3\n");
        }
        let problems = match parse_with(&rendered.text, &env) {
            Ok(s) => return Err(TestCaseError::fail(format!("accepted: {s:?}\n{}", rendered.text))),
            Err(problems) => problems,
        };
        let at = |index: usize, field: &str| rendered.lines[&(index, field.to_string())];
        let (line, field) = match corruption {
            Corruption::BadId | Corruption::DuplicateId => (at(target, "id"), format!("senders[{target}].id")),
            Corruption::DuplicateNumber => (at(target, "phone_number_id"), format!("senders[{target}].phone_number_id")),
            Corruption::UnsetVariable | Corruption::SecretInsteadOfName => {
                (at(target, "access_token_env"), format!("senders[{target}].access_token_env"))
            }
            Corruption::EmptyVariable => (at(target, "app_secret_env"), format!("senders[{target}].app_secret_env")),
            Corruption::MpsZero | Corruption::MpsAbsurd => (at(target, "mps"), format!("senders[{target}].mps")),
            Corruption::UnknownField => (at(target, "colour"), format!("senders[{target}].colour")),
            Corruption::MissingField => (rendered.entry_lines[target], format!("senders[{target}].waba_id")),
            Corruption::SecondDefault => {
                let later = target.max(default);
                (at(later, "default"), format!("senders[{later}].default"))
            }
            Corruption::NoDefault => (rendered.senders_line, "default".to_string()),
            Corruption::Version => (2, "version".to_string()),
            Corruption::OtherPortfolio => (at(target, "portfolio_id"), format!("senders[{target}].portfolio_id")),
        };
        prop_assert_eq!(
            places(&problems),
            vec![(line, field.as_str())],
            "{:#?}\n{}", problems, rendered.text
        );
        for p in &problems {
            prop_assert!(!p.to_string().contains(&secret), "{}", p);
        }
    }

    #[test]
    fn never_panics_on_arbitrary_yaml(text in "[a-z_:\\- \n\\[\\]{},'\"#&*!|>0-9.~]{0,300}") {
        check_any(&text);
    }

    #[test]
    fn never_panics_on_a_mangled_valid_file(
        (specs, default) in file_strategy(),
        edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<bool>(), "[ \n:\\-\\[{}&*!'\"#a-z0-9]"), 1..6),
    ) {
        let mut text = render(&specs, default, &|_, _| {}).text.into_bytes();
        for (at, delete, insert) in edits {
            if text.is_empty() { break; }
            let i = at.index(text.len());
            if delete {
                text.remove(i);
            } else {
                for (k, b) in insert.bytes().enumerate() {
                    text.insert(i + k, b);
                }
            }
        }
        let text = String::from_utf8_lossy(&text).into_owned();
        check_any(&text);
    }
}

fn corruption_is_second(c: &Corruption) -> bool {
    matches!(c, Corruption::SecondDefault)
}

/// Parses without panicking; every problem has a line of the text.
fn check_any(text: &str) {
    let env = |name: &str| name.len().is_multiple_of(2).then(|| "x".to_string());
    if let Err(problems) = Senders::from_yaml(text, &env) {
        assert!(!problems.is_empty());
        let last = text.lines().count().max(1) + 1;
        for p in &problems {
            assert!(p.line >= 1 && p.line <= last, "{p} in {text:?}");
            assert!(!p.to_string().contains('\n'), "{p:?}");
        }
    }
}

#[test]
fn the_default_sender_business_and_portfolio_are_stored_as_default() {
    let senders = parse_with(EXAMPLE, &example_env()).unwrap();
    let keys = |id: &str| senders.key_of(senders.by_id(id).unwrap());
    let k = keys("a1");
    assert_eq!(
        (k.sender.as_str(), k.business.as_str(), k.portfolio.as_str()),
        ("default", "default", "default")
    );
    // Same business and portfolio as the default, its own conversations.
    let k = keys("a2");
    assert_eq!(
        (k.sender.as_str(), k.business.as_str(), k.portfolio.as_str()),
        ("a2", "default", "default")
    );
    let b1 = senders.by_id("b1").unwrap();
    let k = senders.key_of(b1);
    assert_eq!(k.sender, "b1");
    assert_eq!(k.business, b1.waba_id);
    assert_ne!(k.portfolio, "default");
    // And back.
    assert_eq!(senders.by_key("default").unwrap().id, "a1");
    assert_eq!(senders.id_of_key("default"), "a1");
    assert_eq!(senders.id_of_key("a2"), "a2");
    assert!(senders.by_key("a1").is_none());
    assert_eq!(senders.id_of_key("gone"), "gone");
}

#[test]
fn only_the_default_sender_may_be_called_default() {
    let text = EXAMPLE.replacen("id: a2", "id: default", 1);
    let problems = parse_with(&text, &example_env()).unwrap_err();
    assert!(
        problems
            .iter()
            .any(|p| p.field == "senders[1].id" && p.reason.contains("reserved")),
        "{problems:?}"
    );
}
