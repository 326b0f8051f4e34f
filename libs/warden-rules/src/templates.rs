//! Template placeholders, variables, names and bodies.
//!
//! Bodies use numbered placeholders `{{1}}`, `{{2}}` ... and a send must give exactly
//! one value per placeholder number, checked here before anything is queued so the
//! agent gets `INVALID_ARGUMENT` instead of a platform error later.

/// Longest template name (spec).
pub const MAX_NAME_CHARS: usize = 512;
/// Longest template body (spec).
pub const MAX_BODY_CHARS: usize = 1024;

/// Scans `body` for `{{N}}` (N a positive integer without sign or spaces) and
/// yields each occurrence's number and byte range.
fn scan(body: &str) -> impl Iterator<Item = (u32, std::ops::Range<usize>)> + '_ {
    let bytes = body.as_bytes();
    let mut i = 0;
    std::iter::from_fn(move || {
        while i + 1 < bytes.len() {
            if bytes[i] == b'{' && bytes[i + 1] == b'{' {
                let start = i;
                let digits_start = i + 2;
                let mut j = digits_start;
                while j < bytes.len() && bytes[j].is_ascii_digit() {
                    j += 1;
                }
                if j > digits_start
                    && j - digits_start <= 6
                    && bytes.get(j) == Some(&b'}')
                    && bytes.get(j + 1) == Some(&b'}')
                {
                    let n: u32 = body[digits_start..j].parse().unwrap_or(0);
                    i = j + 2;
                    if n > 0 {
                        return Some((n, start..j + 2));
                    }
                    continue;
                }
                i += 1;
            } else {
                i += 1;
            }
        }
        None
    })
}

/// The distinct placeholder numbers in `body`, ascending (`{{2}} {{1}} {{2}}` -> [1, 2]).
pub fn placeholders(body: &str) -> Vec<u32> {
    let mut out: Vec<u32> = scan(body).map(|(n, _)| n).collect();
    out.sort_unstable();
    out.dedup();
    out
}

/// Why template text or variables are not usable; the text says what was expected.
// Each variant is documented by its message.
#[allow(missing_docs)]
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TemplateError {
    #[error("the template has no placeholders, so it takes no variables, but {given} were given")]
    TakesNoVariables { given: usize },
    #[error(
        "the template has placeholder {{{{1}}}}, so it needs exactly 1 variable, but {given} were given"
    )]
    NeedsOneVariable { given: usize },
    #[error(
        "the template has placeholders {{{{1}}}} to {{{{{expected}}}}}, so it needs exactly {expected} variables, but {given} were given"
    )]
    NeedsVariables { expected: usize, given: usize },
    #[error("variable {{{{{n}}}}} is empty; give a value for every placeholder")]
    EmptyVariable { n: usize },
    #[error("variable {{{{{n}}}}} {source}")]
    BadVariable {
        n: usize,
        source: crate::text::TextError,
    },
    #[error("template name is empty")]
    EmptyName,
    #[error("template name has {count} characters; at most {MAX_NAME_CHARS} are allowed")]
    NameTooLong { count: usize },
    #[error(
        "template name contains {c:?}; use only lower-case letters, digits and underscores (e.g. order_update_2)"
    )]
    NameCharacter { c: char },
    #[error("template body is empty")]
    EmptyBody,
    #[error("template body has {count} characters; at most {MAX_BODY_CHARS} are allowed")]
    BodyTooLong { count: usize },
    #[error(
        "template placeholders must be numbered {{{{1}}}}, {{{{2}}}}, ... without gaps; {{{{{missing}}}}} is missing"
    )]
    PlaceholderGap { missing: u32 },
    #[error("variable {{{{{n}}}}} must be text, a number or a boolean")]
    VariableNotText { n: usize },
    #[error("variables key {key:?} must be a placeholder number like \"1\"")]
    VariablesKey { key: String },
    #[error("variables must be numbered 1 to {count} without gaps or repeats; {n} is out of place")]
    VariablesOutOfPlace { count: usize, n: usize },
    #[error("variables must be a JSON array or an object keyed by placeholder number")]
    VariablesShape,
}

/// How many variables a send must give: the highest placeholder number (0 for none).
pub fn required_variable_count(body: &str) -> usize {
    scan(body).map(|(n, _)| n as usize).max().unwrap_or(0)
}

/// Checks that `variables` fill `body` exactly: one non-blank value per placeholder
/// number. The message says what was expected and what was given.
pub fn validate_variables(body: &str, variables: &[String]) -> Result<(), TemplateError> {
    let expected = required_variable_count(body);
    let given = variables.len();
    if given != expected {
        return Err(match expected {
            0 => TemplateError::TakesNoVariables { given },
            1 => TemplateError::NeedsOneVariable { given },
            expected => TemplateError::NeedsVariables { expected, given },
        });
    }
    if let Some(i) = variables.iter().position(|v| v.trim().is_empty()) {
        return Err(TemplateError::EmptyVariable { n: i + 1 });
    }
    check_parameters(variables)
}

/// Every value is text the platform takes inside a template parameter (no control
/// character, newline or tab, at most four spaces in a row).
pub fn check_parameters(variables: &[String]) -> Result<(), TemplateError> {
    for (i, v) in variables.iter().enumerate() {
        crate::text::check(v, crate::text::TextKind::TemplateParameter)
            .map_err(|source| TemplateError::BadVariable { n: i + 1, source })?;
    }
    Ok(())
}

/// Fills each `{{N}}` with `variables[N-1]` in one pass (a value containing `{{1}}`
/// is not expanded again); placeholders without a value stay as they are.
pub fn render(body: &str, variables: &[String]) -> String {
    let mut out = String::with_capacity(body.len());
    let mut last = 0;
    for (n, range) in scan(body) {
        if let Some(value) = variables.get(n as usize - 1) {
            out.push_str(&body[last..range.start]);
            out.push_str(value);
            last = range.end;
        }
    }
    out.push_str(&body[last..]);
    out
}

/// Checks a template name: 1 to 512 characters of lower-case letters, digits and
/// underscores, as the platform requires.
pub fn validate_template_name(name: &str) -> Result<(), TemplateError> {
    let count = name.chars().count();
    if count == 0 {
        return Err(TemplateError::EmptyName);
    }
    if count > MAX_NAME_CHARS {
        return Err(TemplateError::NameTooLong { count });
    }
    if let Some(c) = name
        .chars()
        .find(|c| !(c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '_'))
    {
        return Err(TemplateError::NameCharacter { c });
    }
    Ok(())
}

/// Checks a template body: 1 to 1024 characters, not blank, and placeholders numbered
/// 1, 2, ... without gaps (the platform refuses `{{1}} {{3}}`).
pub fn validate_template_body(body: &str) -> Result<(), TemplateError> {
    let count = body.chars().count();
    if body.trim().is_empty() {
        return Err(TemplateError::EmptyBody);
    }
    if count > MAX_BODY_CHARS {
        return Err(TemplateError::BodyTooLong { count });
    }
    let numbers = placeholders(body);
    for (i, n) in numbers.iter().enumerate() {
        let want = i as u32 + 1;
        if *n != want {
            return Err(TemplateError::PlaceholderGap { missing: want });
        }
    }
    Ok(())
}

/// Reads template variables from a tool parameter: a JSON array (`["Ana", "42"]`,
/// send_template) or an object keyed by placeholder number (`{"1": "Ana"}`, campaigns).
/// Strings, numbers and booleans become text; object keys must be 1..=n without gaps.
/// `null` means no variables.
pub fn parse_variables(value: &serde_json::Value) -> Result<Vec<String>, TemplateError> {
    use serde_json::Value as J;
    let text = |v: &J, n: usize| -> Result<String, TemplateError> {
        match v {
            J::String(s) => Ok(s.clone()),
            J::Number(n) => Ok(n.to_string()),
            J::Bool(b) => Ok(b.to_string()),
            _ => Err(TemplateError::VariableNotText { n }),
        }
    };
    match value {
        J::Null => Ok(Vec::new()),
        J::Array(items) => items
            .iter()
            .enumerate()
            .map(|(i, v)| text(v, i + 1))
            .collect(),
        J::Object(map) => {
            let mut numbered = Vec::with_capacity(map.len());
            for (k, v) in map {
                let n: usize = k
                    .trim()
                    .parse()
                    .ok()
                    .filter(|n| *n >= 1)
                    .ok_or_else(|| TemplateError::VariablesKey { key: k.clone() })?;
                numbered.push((n, text(v, n)?));
            }
            numbered.sort_by_key(|(n, _)| *n);
            for (i, (n, _)) in numbered.iter().enumerate() {
                if *n != i + 1 {
                    return Err(TemplateError::VariablesOutOfPlace {
                        count: numbered.len(),
                        n: *n,
                    });
                }
            }
            Ok(numbered.into_iter().map(|(_, v)| v).collect())
        }
        _ => Err(TemplateError::VariablesShape),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn v(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn finds_placeholders() {
        let body = "Hi {{1}}, order {{2}} ships {{2}}. {{ 3 }} {{0}} {{x}} {1} {{{4}}}";
        assert_eq!(placeholders(body), vec![1, 2, 4]);
        assert_eq!(required_variable_count(body), 4);
        assert_eq!(placeholders("no placeholders"), Vec::<u32>::new());
        assert_eq!(required_variable_count(""), 0);
        assert_eq!(placeholders("{{10}} and {{9}}"), vec![9, 10]);
        assert_eq!(
            placeholders("{{1234567}}"),
            Vec::<u32>::new(),
            "absurd numbers ignored"
        );
    }

    #[test]
    fn variables_must_match() {
        let body = "Hi {{1}}, your code is {{2}}.";
        assert!(validate_variables(body, &v(&["Ana", "42"])).is_ok());
        let e = validate_variables(body, &v(&["Ana"]))
            .unwrap_err()
            .to_string();
        assert!(e.contains("exactly 2") && e.contains("1 were given"), "{e}");
        let e = validate_variables(body, &v(&["a", "b", "c"]))
            .unwrap_err()
            .to_string();
        assert!(e.contains("3 were given"), "{e}");
        assert!(validate_variables("plain", &[]).is_ok());
        assert!(
            validate_variables("plain", &v(&["x"]))
                .unwrap_err()
                .to_string()
                .contains("no placeholders")
        );
        assert!(
            validate_variables("{{1}}", &v(&[" "]))
                .unwrap_err()
                .to_string()
                .contains("{{1}} is empty")
        );
    }

    #[test]
    fn renders_once() {
        assert_eq!(
            render("Hi {{1}}, {{2}}!", &v(&["Ana", "welcome"])),
            "Hi Ana, welcome!"
        );
        assert_eq!(render("{{1}}{{1}}", &v(&["x"])), "xx");
        assert_eq!(render("Hi {{1}}", &v(&["{{1}}"])), "Hi {{1}}");
        assert_eq!(render("Hi {{2}}", &v(&["a"])), "Hi {{2}}");
        assert_eq!(render("héllo {{1}} ü", &v(&["ß"])), "héllo ß ü");
    }

    #[test]
    fn names_and_bodies() {
        assert!(validate_template_name("order_update_2").is_ok());
        assert!(validate_template_name(&"a".repeat(512)).is_ok());
        assert!(
            validate_template_name(&"a".repeat(513))
                .unwrap_err()
                .to_string()
                .contains("513")
        );
        assert!(validate_template_name("").is_err());
        assert!(
            validate_template_name("Order")
                .unwrap_err()
                .to_string()
                .contains("'O'")
        );
        assert!(validate_template_name("order-update").is_err());
        assert!(validate_template_name("order update").is_err());
        assert!(validate_template_body("Hi {{1}}").is_ok());
        assert!(validate_template_body(&"é".repeat(1024)).is_ok());
        assert!(
            validate_template_body(&"é".repeat(1025))
                .unwrap_err()
                .to_string()
                .contains("1025")
        );
        assert!(validate_template_body("   ").is_err());
        assert!(
            validate_template_body("{{1}} {{3}}")
                .unwrap_err()
                .to_string()
                .contains("{{2}} is missing")
        );
        assert!(
            validate_template_body("{{2}}")
                .unwrap_err()
                .to_string()
                .contains("{{1}} is missing")
        );
    }

    #[test]
    fn variables_from_json() {
        assert_eq!(
            parse_variables(&json!(["a", 2, true])).unwrap(),
            v(&["a", "2", "true"])
        );
        assert_eq!(
            parse_variables(&json!({"2": "b", "1": "a"})).unwrap(),
            v(&["a", "b"])
        );
        assert_eq!(parse_variables(&json!(null)).unwrap(), Vec::<String>::new());
        assert_eq!(parse_variables(&json!({})).unwrap(), Vec::<String>::new());
        assert!(parse_variables(&json!({"1": "a", "3": "c"})).is_err());
        assert!(
            parse_variables(&json!({"x": "a"}))
                .unwrap_err()
                .to_string()
                .contains("\"x\"")
        );
        assert!(parse_variables(&json!({"0": "a"})).is_err());
        assert!(parse_variables(&json!([{"a": 1}])).is_err());
        assert!(parse_variables(&json!("a")).is_err());
    }

    proptest! {
        #[test]
        fn never_panics(body in "\\PC{0,200}", vars in prop::collection::vec("\\PC{0,10}", 0..4)) {
            let _ = placeholders(&body);
            let _ = render(&body, &vars);
            let _ = validate_variables(&body, &vars);
            let _ = validate_template_body(&body);
            let _ = validate_template_name(&body);
        }

        #[test]
        fn rendering_with_exact_variables_leaves_no_placeholder(
            n in 1usize..6,
            words in prop::collection::vec("[a-z ]{0,6}", 6),
        ) {
            let body: String = (1..=n).map(|i| format!("{} {{{{{i}}}}} ", words[i - 1])).collect();
            let vars: Vec<String> = (1..=n).map(|i| format!("v{i}")).collect();
            prop_assert!(validate_variables(&body, &vars).is_ok());
            let out = render(&body, &vars);
            prop_assert!(placeholders(&out).is_empty());
        }
    }
}
