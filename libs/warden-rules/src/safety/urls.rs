//! Finding the links in a message's text, for `content_filter`'s `link_domains`.
//!
//! A link is what a WhatsApp client would turn into one: `scheme://host...` for any
//! scheme, or `www.host...` without a scheme. Trailing sentence punctuation is not part of
//! it (`see https://a.example/x.` links `https://a.example/x`), and a closing bracket only
//! is when the link opened one. Hosts are compared in their ASCII (punycode) form, lower
//! case, without a trailing dot, so `https://BÜCHER.de` and `xn--bcher-kva.de` are one host.

/// One link found in a text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FoundUrl {
    /// The link as written (without trailing punctuation).
    pub text: String,
    /// Its host, lower-case ASCII (punycode for international names); empty when the link
    /// has none (`file:///x`).
    pub host: String,
}

/// The links in `text`, in order.
pub fn extract(text: &str) -> Vec<FoundUrl> {
    let mut out = Vec::new();
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let Some((start, host_at)) = link_start(text, i) else {
            i += next_char_len(text, i);
            continue;
        };
        let end = link_end(text, host_at);
        let link = &text[start..end];
        if end > host_at {
            let host = host_of(&text[host_at..end]);
            out.push(FoundUrl {
                text: link.to_string(),
                host,
            });
        }
        i = end.max(host_at).max(i + 1);
        while i < bytes.len() && !text.is_char_boundary(i) {
            i += 1;
        }
    }
    out
}

fn next_char_len(text: &str, i: usize) -> usize {
    text[i..].chars().next().map_or(1, char::len_utf8)
}

/// When a link starts at byte `i`: its start and where its host begins.
fn link_start(text: &str, i: usize) -> Option<(usize, usize)> {
    let bytes = text.as_bytes();
    // A link starts at a word boundary.
    let boundary = i == 0 || {
        let prev = text[..i].chars().next_back().unwrap_or(' ');
        !(prev.is_alphanumeric() || prev == '.' || prev == '-' || prev == '+' || prev == '_')
    };
    if !boundary || !bytes[i].is_ascii_alphabetic() {
        return None;
    }
    // scheme://
    let mut j = i + 1;
    while j < bytes.len() && (bytes[j].is_ascii_alphanumeric() || b"+.-".contains(&bytes[j])) {
        j += 1;
    }
    if j - i <= 32 && text[j..].starts_with("://") {
        return Some((i, j + 3));
    }
    // www. without a scheme (followed by at least one more label character).
    if bytes.len() >= i + 5 && bytes[i..i + 4].eq_ignore_ascii_case(b"www.") {
        let next = text[i + 4..].chars().next()?;
        if next.is_alphanumeric() {
            return Some((i, i));
        }
    }
    None
}

/// Where the link that has its host at `host_at` ends: at white space or a character that
/// never appears in a link, minus trailing punctuation.
fn link_end(text: &str, host_at: usize) -> usize {
    let mut end = host_at;
    for (off, c) in text[host_at..].char_indices() {
        if c.is_whitespace()
            || c.is_control()
            || matches!(c, '<' | '>' | '"' | '`' | '\u{00ab}' | '\u{00bb}')
        {
            break;
        }
        end = host_at + off + c.len_utf8();
    }
    // Trailing punctuation ends the sentence, not the link; a closing bracket belongs to
    // the link only when the link opened one.
    loop {
        let link = &text[host_at..end];
        let Some(last) = link.chars().next_back() else {
            break;
        };
        let strip = match last {
            '.' | ',' | ';' | ':' | '!' | '?' | '\'' | '*' | '\u{2019}' | '\u{201d}' => true,
            ')' => link.matches('(').count() < link.matches(')').count(),
            ']' => link.matches('[').count() < link.matches(']').count(),
            '}' => link.matches('{').count() < link.matches('}').count(),
            _ => false,
        };
        if !strip {
            break;
        }
        end -= last.len_utf8();
    }
    end
}

/// The host of `rest` (what follows `scheme://`, or a `www.` link).
fn host_of(rest: &str) -> String {
    let authority = rest.split(['/', '?', '#', '\\']).next().unwrap_or("");
    let host_port = authority.rsplit('@').next().unwrap_or("");
    let host = if let Some(v6) = host_port.strip_prefix('[') {
        v6.split(']').next().unwrap_or("")
    } else {
        host_port.split(':').next().unwrap_or("")
    };
    normalise_host(host)
}

/// A host or a listed domain as compared: ASCII (punycode) lower case, no trailing dot.
/// A name that is not a valid international name is kept lower-cased as written, so it
/// still matches only itself.
pub fn normalise_host(host: &str) -> String {
    let host = host.trim().trim_end_matches('.');
    if host.is_ascii() {
        return host.to_ascii_lowercase();
    }
    idna::domain_to_ascii(host).unwrap_or_else(|_| host.to_lowercase())
}

/// True when `host` is `domain` or one of its subdomains (both normalised).
pub fn on_domain(host: &str, domain: &str) -> bool {
    host == domain
        || (host.len() > domain.len()
            && host.ends_with(domain)
            && host.as_bytes()[host.len() - domain.len() - 1] == b'.')
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn hosts(text: &str) -> Vec<String> {
        extract(text).into_iter().map(|u| u.host).collect()
    }

    #[test]
    fn schemes_www_and_punctuation() {
        let found = extract("Pay at https://pay.example.com/x?a=1. Or (www.Shop.example/y), ok?");
        assert_eq!(found.len(), 2, "{found:?}");
        assert_eq!(found[0].text, "https://pay.example.com/x?a=1");
        assert_eq!(found[0].host, "pay.example.com");
        assert_eq!(found[1].text, "www.Shop.example/y");
        assert_eq!(found[1].host, "www.shop.example");
        assert_eq!(hosts("ftp://user:pw@files.example:21/a"), ["files.example"]);
        assert_eq!(hosts("see HTTP://EXAMPLE.ORG:8080!"), ["example.org"]);
        assert_eq!(hosts("http://[::1]:80/"), ["::1"]);
        assert_eq!(
            extract("https://en.wikipedia.org/wiki/Rust_(language)")[0].text,
            "https://en.wikipedia.org/wiki/Rust_(language)"
        );
        assert!(hosts("no links here: e.g. file.txt, a.www.b, mailto:a@b.c").is_empty());
        assert!(
            hosts("awww.example.com").is_empty(),
            "www. only at a word start"
        );
    }

    #[test]
    fn punycode() {
        assert_eq!(hosts("https://bücher.de/x"), ["xn--bcher-kva.de"]);
        assert_eq!(hosts("https://XN--BCHER-KVA.de"), ["xn--bcher-kva.de"]);
        assert_eq!(normalise_host("Bücher.DE."), "xn--bcher-kva.de");
        assert!(on_domain(
            "shop.xn--bcher-kva.de",
            &normalise_host("bücher.de")
        ));
        assert!(on_domain("example.com", "example.com"));
        assert!(!on_domain("badexample.com", "example.com"));
        assert!(!on_domain("example.com.evil.net", "example.com"));
    }

    fn label() -> impl Strategy<Value = String> {
        "[a-z0-9]([a-z0-9-]{0,10}[a-z0-9])?"
    }

    proptest! {
        #[test]
        fn never_panics(text in "\\PC{0,200}") {
            for u in extract(&text) {
                prop_assert!(text.contains(&u.text));
            }
        }

        #[test]
        fn finds_a_link_in_any_sentence(
            scheme in prop::sample::select(vec!["http://", "https://", "HTTPS://", "ftp://", "www."]),
            labels in prop::collection::vec(label(), 1..4),
            tld in "[a-z]{2,6}",
            // (A path never ends in punctuation here: a trailing `?` or `.` ends the sentence.)
            path in "(/[a-zA-Z0-9_~%=&-]{0,12}){0,3}(\\?[a-z]{1,3}=[a-z0-9]{1,4})?",
            before in "[a-zA-Z ,]{0,20}",
            trailing in prop::sample::select(vec!["", ".", ",", "!", "?", ")", ":", ";", "..."]),
            after in "( [a-zA-Z]{0,10}){0,3}",
        ) {
            let host = format!("{}.{tld}", labels.join("."));
            let link = format!("{scheme}{host}{path}");
            let text = format!("{before} {link}{trailing}{after}");
            let found = extract(&text);
            prop_assert_eq!(found.len(), 1, "{:?} in {:?}", found, text);
            let want_host = if scheme == "www." { format!("www.{host}") } else { host.clone() };
            prop_assert_eq!(&found[0].host, &want_host);
            prop_assert_eq!(&found[0].text, &link);
        }

        #[test]
        fn international_hosts_compare_as_punycode(
            stem in "[a-zäöüéñ]{1,10}",
            tld in "[a-z]{2,4}",
            sub in prop::option::of(label()),
        ) {
            let domain = format!("{stem}.{tld}");
            let host = match &sub { Some(s) => format!("{s}.{domain}"), None => domain.clone() };
            let found = extract(&format!("go to https://{host}/a now"));
            prop_assert_eq!(found.len(), 1);
            prop_assert!(found[0].host.is_ascii());
            prop_assert!(on_domain(&found[0].host, &normalise_host(&domain)));
            prop_assert!(on_domain(&found[0].host, &normalise_host(&domain.to_uppercase())));
        }
    }
}
