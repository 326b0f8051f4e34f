//! Business-scoped user IDs (BSUIDs) and the customer key.
//!
//! The platform names every user by a BSUID (`US.13491208655302741918`: ISO country code,
//! a dot, up to 128 letters and digits) and, when the business's portfolios are linked, by
//! a parent BSUID (`US.ENT.11815799212886844830`). A user with a username may arrive with
//! no phone number at all, so a customer's key is its canonical phone digits when known,
//! else its BSUID (see docs/architecture.md, "Customers and identifiers"). Both live in
//! [`PhoneNumber`], the key type every table and rule already uses: a BSUID starts with a
//! letter, a phone key with a digit, so the two never collide.

use std::fmt;

use serde::{Deserialize, Deserializer};

use crate::phone::{PhoneError, PhoneNumber, canonicalize, country_for_digits};

/// Most characters of the identifier after the country code (the platform's limit).
pub const MAX_ID_CHARS: usize = 128;

/// Why a BSUID was refused. Messages say what to fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BsuidError {
    /// No two-letter country code and dot at the start.
    #[error(
        "BSUID must start with a two-letter upper-case country code and a dot, e.g. US.13491208655302741918"
    )]
    Country,
    /// Nothing after the country code.
    #[error("BSUID has nothing after its country code; e.g. US.13491208655302741918")]
    EmptyId,
    /// A character that is not a letter or digit.
    #[error(
        "BSUID contains {ch:?}; after the country code (and ENT. for a parent BSUID) only letters and digits are allowed"
    )]
    InvalidCharacter {
        /// The offending character.
        ch: char,
    },
    /// More than [`MAX_ID_CHARS`] characters.
    #[error("BSUID identifier has {count} characters; at most {MAX_ID_CHARS} are allowed")]
    TooLong {
        /// Characters found.
        count: usize,
    },
}

/// A customer identifier as a caller or the platform gives it: a phone number or a BSUID.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CustomerIdError {
    /// Written as a phone number, and not a valid one.
    #[error(transparent)]
    Phone(#[from] PhoneError),
    /// Written as a BSUID, and not a valid one.
    #[error(transparent)]
    Bsuid(#[from] BsuidError),
}

/// A valid BSUID or parent BSUID, country code upper case, `ENT` upper case.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Bsuid {
    value: String,
}

impl Bsuid {
    /// The canonical text.
    pub fn as_str(&self) -> &str {
        &self.value
    }

    /// `CC.ENT.…`: shared by the linked portfolios of one business.
    pub fn is_parent(&self) -> bool {
        self.value.get(2..7) == Some(".ENT.")
    }

    /// The ISO code of the country prefix when it names a country we know.
    pub fn country(&self) -> Option<&'static str> {
        country_of(&self.value)
    }

    /// The customer key of a customer known by this BSUID only.
    pub fn key(&self) -> PhoneNumber {
        PhoneNumber {
            digits: self.value.clone(),
        }
    }
}

impl fmt::Display for Bsuid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.value)
    }
}

/// True when `input` is written as a BSUID (starts with a letter), valid or not: then it
/// is parsed as one and its error names the BSUID form, never the phone form.
pub fn looks_like_bsuid(input: &str) -> bool {
    input
        .trim()
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic())
}

/// Parses `CC.<id>` or `CC.ENT.<id>`: `CC` two upper-case letters (as the platform writes
/// them; `us.1` is refused, not guessed at), `<id>` 1 to 128 ASCII letters and digits.
/// Surrounding whitespace is ignored.
pub fn parse(input: &str) -> Result<Bsuid, BsuidError> {
    let s = input.trim();
    let bytes = s.as_bytes();
    if bytes.len() < 3
        || !bytes[0].is_ascii_uppercase()
        || !bytes[1].is_ascii_uppercase()
        || bytes[2] != b'.'
    {
        return Err(BsuidError::Country);
    }
    let country = &s[..2];
    let mut rest = &s[3..];
    let mut parent = false;
    // `get`: hostile input may put a multi-byte character at any byte offset.
    if rest.len() > 4 && rest.starts_with("ENT.") {
        parent = true;
        rest = &rest[4..];
    }
    if rest.is_empty() {
        return Err(BsuidError::EmptyId);
    }
    if let Some(ch) = rest.chars().find(|c| !c.is_ascii_alphanumeric()) {
        return Err(BsuidError::InvalidCharacter { ch });
    }
    if rest.len() > MAX_ID_CHARS {
        return Err(BsuidError::TooLong { count: rest.len() });
    }
    let value = if parent {
        format!("{country}.ENT.{rest}")
    } else {
        format!("{country}.{rest}")
    };
    Ok(Bsuid { value })
}

/// A phone number (canonical digits) or a BSUID, as the customer key: what every tool
/// that takes a customer accepts.
pub fn customer_key(input: &str) -> Result<PhoneNumber, CustomerIdError> {
    if looks_like_bsuid(input) {
        Ok(parse(input)?.key())
    } else {
        Ok(canonicalize(input)?)
    }
}

/// The ISO code of a BSUID's country prefix when we know the country.
pub fn country_of(bsuid: &str) -> Option<&'static str> {
    let code = bsuid.get(..2)?.to_ascii_uppercase();
    known_country(&code)
}

fn known_country(code: &str) -> Option<&'static str> {
    // The calling-code table names every country we price; its codes are the known ones.
    crate::phone::known_countries().find(|c| *c == code)
}

impl PhoneNumber {
    /// ISO 3166-1 alpha-2 code of the number's country, from its calling code (a BSUID
    /// key's from its country prefix).
    ///
    /// `None` for calling codes that belong to no country (international networks,
    /// satellite services, unassigned codes). Pricing falls back to `DEFAULT` then;
    /// see [`PhoneNumber::pricing_country`].
    pub fn country(&self) -> Option<&'static str> {
        if self.is_bsuid() {
            return country_of(&self.digits);
        }
        country_for_digits(&self.digits)
    }

    /// The country for pricing lookups: [`PhoneNumber::country`] or `"DEFAULT"`.
    pub fn pricing_country(&self) -> &'static str {
        self.country().unwrap_or("DEFAULT")
    }

    /// The phone digits, None for a BSUID key.
    pub fn phone_digits(&self) -> Option<&str> {
        (!self.is_bsuid()).then_some(self.digits.as_str())
    }

    /// The BSUID, None for a phone key.
    pub fn bsuid(&self) -> Option<&str> {
        self.is_bsuid().then_some(self.digits.as_str())
    }
}

/// A key deserializes from either form, as [`customer_key`] parses it.
impl<'de> Deserialize<'de> for PhoneNumber {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let raw = String::deserialize(deserializer)?;
        customer_key(&raw).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn parses_plain_and_parent_bsuids() {
        let b = parse("US.13491208655302741918").unwrap();
        assert!(!b.is_parent());
        assert_eq!(b.country(), Some("US"));
        let p = parse(" US.ENT.11815799212886844830 ").unwrap();
        assert!(p.is_parent());
        assert_eq!(p.as_str(), "US.ENT.11815799212886844830");
        assert_eq!(parse("BR.abcDEF12").unwrap().as_str(), "BR.abcDEF12");
    }

    #[test]
    fn refuses_malformed_bsuids() {
        assert_eq!(parse("U.123"), Err(BsuidError::Country));
        assert_eq!(parse("USA123"), Err(BsuidError::Country));
        assert_eq!(parse("1S.123"), Err(BsuidError::Country));
        assert_eq!(parse("us.1349"), Err(BsuidError::Country));
        assert_eq!(parse("Us.1349"), Err(BsuidError::Country));
        assert_eq!(
            parse("US.ent.1"),
            Err(BsuidError::InvalidCharacter { ch: '.' })
        );
        assert_eq!(parse("US."), Err(BsuidError::EmptyId));
        assert_eq!(
            parse("US.ENT."),
            Err(BsuidError::InvalidCharacter { ch: '.' })
        );
        assert_eq!(
            parse("US.12-34"),
            Err(BsuidError::InvalidCharacter { ch: '-' })
        );
        assert!(matches!(
            parse(&format!("US.{}", "1".repeat(129))),
            Err(BsuidError::TooLong { count: 129 })
        ));
    }

    #[test]
    fn customer_key_takes_a_phone_or_a_bsuid() {
        let phone = customer_key("+62 812-3456-789").unwrap();
        assert_eq!(phone.digits(), "628123456789");
        assert!(!phone.is_bsuid());
        assert_eq!(phone.phone_digits(), Some("628123456789"));
        let b = customer_key("ID.9X8Y7").unwrap();
        assert!(b.is_bsuid());
        assert_eq!(b.bsuid(), Some("ID.9X8Y7"));
        assert_eq!(b.country(), Some("ID"));
        assert_eq!(b.pricing_country(), "ID");
        assert!(!b.starts_with_prefix("62"));
        assert!(matches!(
            customer_key("ID-9"),
            Err(CustomerIdError::Bsuid(BsuidError::Country))
        ));
        assert!(matches!(
            customer_key("0812"),
            Err(CustomerIdError::Phone(_))
        ));
        // A BSUID key survives a serde round trip (it travels in queued work).
        let json = serde_json::to_string(&b).unwrap();
        assert_eq!(serde_json::from_str::<PhoneNumber>(&json).unwrap(), b);
        assert_eq!(country_of("ZZ.1"), None);
    }

    proptest! {
        #[test]
        fn valid_bsuids_parse_and_are_canonical(
            cc in "[A-Z]{2}", ent in any::<bool>(), id in "[A-Za-z0-9]{1,128}"
        ) {
            let raw = if ent { format!("{cc}.ENT.{id}") } else { format!("{cc}.{id}") };
            let b = parse(&raw).unwrap();
            prop_assert_eq!(b.is_parent(), ent);
            prop_assert!(b.as_str().ends_with(&id));
            prop_assert_eq!(&b.as_str()[..2], cc.as_str());
            // Parsing the canonical form changes nothing.
            prop_assert_eq!(parse(b.as_str()).unwrap(), b.clone());
            let key = customer_key(&raw).unwrap();
            prop_assert!(key.is_bsuid());
            prop_assert_eq!(key.digits(), b.as_str());
        }

        #[test]
        fn any_other_character_is_refused(
            cc in "[A-Z]{2}", head in "[A-Za-z0-9]{0,8}", bad in "[^A-Za-z0-9]", tail in "[A-Za-z0-9]{0,8}"
        ) {
            let raw = format!("{cc}.{head}{bad}{tail}");
            // Whitespace at the ends is trimmed; a dot may form `ENT.`; anything else fails.
            let trimmed_ok = raw.trim() != raw && parse(raw.trim()).is_ok();
            let ent = head == "ENT" && bad == ".";
            if !trimmed_ok && !ent {
                prop_assert!(parse(&raw).is_err());
            }
        }

        #[test]
        fn arbitrary_input_never_panics_and_keys_never_collide(s in "\\PC{0,40}") {
            let _ = parse(&s);
            if let Ok(key) = customer_key(&s) {
                // A phone key is digits only, a BSUID key starts with a letter.
                prop_assert_eq!(key.is_bsuid(), key.digits().as_bytes()[0].is_ascii_alphabetic());
            }
        }
    }
}
