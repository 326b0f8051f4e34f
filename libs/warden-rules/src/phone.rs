//! Phone numbers: parsing, the canonical form and the country.
//!
//! Customers are identified by their phone number, so every form an agent may type
//! (`+62 812-3456-789`, `628123456789`, `(+62) 812.345.6789`) must land on one key:
//! the E.164 digits without `+` (8 to 15 digits).
//!
//! The country comes from a compact static table of ITU-T E.164 country calling
//! codes (longest-prefix match). A maintained phone-number library (full numbering
//! plans, per-country length checks) was judged too heavy for the build time it
//! costs; pricing and `country_block` policies only need the calling code, which
//! this table gives. NANP (+1) maps to `US` except for the area codes of Canada and
//! the Caribbean members, which are listed.

use std::fmt;
use std::str::FromStr;

use serde::{Serialize, Serializer};

/// Fewest digits a canonical number may have (country code plus a short subscriber number).
pub const MIN_DIGITS: usize = 8;
/// Most digits E.164 allows.
pub const MAX_DIGITS: usize = 15;

/// Why a phone number was refused. Messages are one sentence that says what to fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PhoneError {
    /// Nothing but whitespace was given.
    #[error("phone number is empty; give the number with its country code, e.g. +628123456789")]
    Empty,
    /// A character that is not a digit or an allowed separator.
    #[error(
        "phone number contains {ch:?} at position {position}; only digits, a leading '+', spaces, dashes, dots and parentheses are allowed"
    )]
    InvalidCharacter {
        /// The offending character.
        ch: char,
        /// 1-based character position in the input.
        position: usize,
    },
    /// A `+` after a digit or a second `+`.
    #[error(
        "phone number has a '+' that is not at the start; '+' may only precede the country code"
    )]
    MisplacedPlus,
    /// Separators only.
    #[error("phone number contains no digits")]
    NoDigits,
    /// National trunk prefix instead of a country code.
    #[error(
        "phone number starts with 0; give the country code first (E.164, e.g. +62 for Indonesia) instead of a national prefix"
    )]
    LeadingZero,
    /// Fewer than [`MIN_DIGITS`] digits.
    #[error(
        "phone number has {count} digits; at least {MIN_DIGITS} are needed (country code and subscriber number)"
    )]
    TooShort {
        /// Digits found.
        count: usize,
    },
    /// Written like a decimal number (`14155550101.0`): a fraction is not part of a
    /// phone number, and dropping the dot would name a different customer.
    #[error(
        "phone number is written as a decimal number (a '.' followed by a fraction); give the digits only, as text, e.g. \"+14155550101\""
    )]
    Fraction,
    /// More than [`MAX_DIGITS`] digits.
    #[error("phone number has {count} digits; E.164 allows at most {MAX_DIGITS}")]
    TooLong {
        /// Digits found.
        count: usize,
    },
}

/// A canonical phone number: 8 to 15 ASCII digits, no leading zero (E.164 without `+`).
///
/// Only [`canonicalize`] builds one, so holding a `PhoneNumber` proves the digits are valid.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PhoneNumber {
    // Canonical digits, or a BSUID for a customer known by no phone (`crate::bsuid`).
    pub(crate) digits: String,
}

/// Parses any accepted spelling of a phone number into its canonical form.
///
/// Accepted: digits, one optional `+` before the first digit, and the separators
/// space, tab, `-`, `.`, `(` and `)` anywhere. Leading/trailing whitespace is ignored.
/// Refused: letters or other symbols, a `+` after a digit, a leading `0` (a national
/// prefix, not a country code), fewer than 8 or more than 15 digits.
/// Canonicalising a canonical number returns it unchanged.
pub fn canonicalize(input: &str) -> Result<PhoneNumber, PhoneError> {
    let trimmed = input.trim();
    if trimmed.is_empty() {
        return Err(PhoneError::Empty);
    }
    if looks_decimal(trimmed) {
        return Err(PhoneError::Fraction);
    }
    let mut digits = String::with_capacity(MAX_DIGITS + 1);
    let mut count = 0usize;
    let mut seen_plus = false;
    let mut first_digit: Option<char> = None;
    for (index, ch) in trimmed.chars().enumerate() {
        match ch {
            '0'..='9' => {
                if first_digit.is_none() {
                    first_digit = Some(ch);
                }
                count += 1;
                if count <= MAX_DIGITS + 1 {
                    digits.push(ch);
                }
            }
            '+' => {
                if seen_plus || first_digit.is_some() {
                    return Err(PhoneError::MisplacedPlus);
                }
                seen_plus = true;
            }
            ' ' | '\t' | '-' | '.' | '(' | ')' => {}
            other => {
                return Err(PhoneError::InvalidCharacter {
                    ch: other,
                    position: index + 1,
                });
            }
        }
    }
    match first_digit {
        None => Err(PhoneError::NoDigits),
        Some('0') => Err(PhoneError::LeadingZero),
        Some(_) if count < MIN_DIGITS => Err(PhoneError::TooShort { count }),
        Some(_) if count > MAX_DIGITS => Err(PhoneError::TooLong { count }),
        Some(_) => Ok(PhoneNumber { digits }),
    }
}

/// `14155550101.0`, `+14155550101.`, `14155550101.00`: digits, then one dot ending the
/// input or followed by digits only. Dotted groups (`415.555.0100`, two dots or more)
/// stay accepted separators.
fn looks_decimal(s: &str) -> bool {
    let body = s.strip_prefix('+').unwrap_or(s);
    let Some((int, frac)) = body.split_once('.') else {
        return false;
    };
    !int.is_empty()
        && int.bytes().all(|b| b.is_ascii_digit())
        && frac.bytes().all(|b| b.is_ascii_digit())
        && (frac.is_empty() || int.len() >= MIN_DIGITS)
}

impl PhoneNumber {
    /// True when this key is a BSUID (a customer whose phone we do not know): a BSUID
    /// starts with a letter, a phone key with a digit.
    pub fn is_bsuid(&self) -> bool {
        self.digits.starts_with(|c: char| c.is_ascii_alphabetic())
    }

    /// The canonical digits (E.164 without `+`); the key customers are stored under.
    pub fn digits(&self) -> &str {
        &self.digits
    }

    /// The number with a leading `+`, for display and for the platform API.
    pub fn e164(&self) -> String {
        if self.is_bsuid() {
            return self.digits.clone();
        }
        format!("+{}", self.digits)
    }

    /// True when the digits start with `prefix` (digits only; a leading `+` is ignored),
    /// which is how `country_block` policies match.
    pub fn starts_with_prefix(&self, prefix: &str) -> bool {
        let prefix = prefix.strip_prefix('+').unwrap_or(prefix);
        !prefix.is_empty() && !self.is_bsuid() && self.digits.starts_with(prefix)
    }
}

impl fmt::Display for PhoneNumber {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.digits)
    }
}

impl AsRef<str> for PhoneNumber {
    fn as_ref(&self) -> &str {
        &self.digits
    }
}

impl FromStr for PhoneNumber {
    type Err = PhoneError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        canonicalize(s)
    }
}

impl TryFrom<&str> for PhoneNumber {
    type Error = PhoneError;
    fn try_from(s: &str) -> Result<Self, Self::Error> {
        canonicalize(s)
    }
}

impl From<PhoneNumber> for String {
    fn from(p: PhoneNumber) -> Self {
        p.digits
    }
}

impl Serialize for PhoneNumber {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.digits)
    }
}

/// Country (ISO alpha-2) for a string of E.164 digits, by longest calling-code prefix.
pub fn country_for_digits(digits: &str) -> Option<&'static str> {
    let mut best: Option<(&str, Option<&'static str>)> = None;
    for &(prefix, country) in CALLING_CODES {
        if digits.starts_with(prefix) && best.is_none_or(|(b, _)| prefix.len() > b.len()) {
            best = Some((prefix, country));
        }
    }
    best.and_then(|(_, c)| c)
}

/// Every country code the calling-code table names.
pub(crate) fn known_countries() -> impl Iterator<Item = &'static str> {
    CALLING_CODES.iter().filter_map(|(_, c)| *c)
}

/// ITU-T country calling codes (and a few longer prefixes where one code serves
/// several countries) -> ISO 3166-1 alpha-2. `None` marks non-geographic codes, so a
/// longer non-geographic prefix is not mistaken for a shorter geographic one.
static CALLING_CODES: &[(&str, Option<&str>)] = &[
    // Zone 1: NANP. Default US; Canada and the Caribbean members by area code.
    ("1", Some("US")),
    ("1204", Some("CA")),
    ("1226", Some("CA")),
    ("1236", Some("CA")),
    ("1249", Some("CA")),
    ("1250", Some("CA")),
    ("1257", Some("CA")),
    ("1263", Some("CA")),
    ("1289", Some("CA")),
    ("1306", Some("CA")),
    ("1343", Some("CA")),
    ("1354", Some("CA")),
    ("1365", Some("CA")),
    ("1367", Some("CA")),
    ("1368", Some("CA")),
    ("1382", Some("CA")),
    ("1403", Some("CA")),
    ("1416", Some("CA")),
    ("1418", Some("CA")),
    ("1428", Some("CA")),
    ("1431", Some("CA")),
    ("1437", Some("CA")),
    ("1438", Some("CA")),
    ("1450", Some("CA")),
    ("1468", Some("CA")),
    ("1474", Some("CA")),
    ("1506", Some("CA")),
    ("1514", Some("CA")),
    ("1519", Some("CA")),
    ("1548", Some("CA")),
    ("1579", Some("CA")),
    ("1581", Some("CA")),
    ("1584", Some("CA")),
    ("1587", Some("CA")),
    ("1604", Some("CA")),
    ("1613", Some("CA")),
    ("1639", Some("CA")),
    ("1647", Some("CA")),
    ("1672", Some("CA")),
    ("1683", Some("CA")),
    ("1705", Some("CA")),
    ("1709", Some("CA")),
    ("1742", Some("CA")),
    ("1753", Some("CA")),
    ("1778", Some("CA")),
    ("1780", Some("CA")),
    ("1782", Some("CA")),
    ("1807", Some("CA")),
    ("1819", Some("CA")),
    ("1825", Some("CA")),
    ("1867", Some("CA")),
    ("1873", Some("CA")),
    ("1879", Some("CA")),
    ("1902", Some("CA")),
    ("1905", Some("CA")),
    ("1242", Some("BS")),
    ("1246", Some("BB")),
    ("1264", Some("AI")),
    ("1268", Some("AG")),
    ("1284", Some("VG")),
    ("1340", Some("VI")),
    ("1345", Some("KY")),
    ("1441", Some("BM")),
    ("1473", Some("GD")),
    ("1649", Some("TC")),
    ("1658", Some("JM")),
    ("1876", Some("JM")),
    ("1664", Some("MS")),
    ("1670", Some("MP")),
    ("1671", Some("GU")),
    ("1684", Some("AS")),
    ("1721", Some("SX")),
    ("1758", Some("LC")),
    ("1767", Some("DM")),
    ("1784", Some("VC")),
    ("1787", Some("PR")),
    ("1939", Some("PR")),
    ("1809", Some("DO")),
    ("1829", Some("DO")),
    ("1849", Some("DO")),
    ("1868", Some("TT")),
    ("1869", Some("KN")),
    // Zone 2: Africa and some islands.
    ("20", Some("EG")),
    ("211", Some("SS")),
    ("212", Some("MA")),
    ("213", Some("DZ")),
    ("216", Some("TN")),
    ("218", Some("LY")),
    ("220", Some("GM")),
    ("221", Some("SN")),
    ("222", Some("MR")),
    ("223", Some("ML")),
    ("224", Some("GN")),
    ("225", Some("CI")),
    ("226", Some("BF")),
    ("227", Some("NE")),
    ("228", Some("TG")),
    ("229", Some("BJ")),
    ("230", Some("MU")),
    ("231", Some("LR")),
    ("232", Some("SL")),
    ("233", Some("GH")),
    ("234", Some("NG")),
    ("235", Some("TD")),
    ("236", Some("CF")),
    ("237", Some("CM")),
    ("238", Some("CV")),
    ("239", Some("ST")),
    ("240", Some("GQ")),
    ("241", Some("GA")),
    ("242", Some("CG")),
    ("243", Some("CD")),
    ("244", Some("AO")),
    ("245", Some("GW")),
    ("246", Some("IO")),
    ("247", Some("SH")),
    ("248", Some("SC")),
    ("249", Some("SD")),
    ("250", Some("RW")),
    ("251", Some("ET")),
    ("252", Some("SO")),
    ("253", Some("DJ")),
    ("254", Some("KE")),
    ("255", Some("TZ")),
    ("256", Some("UG")),
    ("257", Some("BI")),
    ("258", Some("MZ")),
    ("260", Some("ZM")),
    ("261", Some("MG")),
    ("262", Some("RE")),
    ("262269", Some("YT")),
    ("262639", Some("YT")),
    ("263", Some("ZW")),
    ("264", Some("NA")),
    ("265", Some("MW")),
    ("266", Some("LS")),
    ("267", Some("BW")),
    ("268", Some("SZ")),
    ("269", Some("KM")),
    ("27", Some("ZA")),
    ("290", Some("SH")),
    ("291", Some("ER")),
    ("297", Some("AW")),
    ("298", Some("FO")),
    ("299", Some("GL")),
    // Zones 3 and 4: Europe.
    ("30", Some("GR")),
    ("31", Some("NL")),
    ("32", Some("BE")),
    ("33", Some("FR")),
    ("34", Some("ES")),
    ("350", Some("GI")),
    ("351", Some("PT")),
    ("352", Some("LU")),
    ("353", Some("IE")),
    ("354", Some("IS")),
    ("355", Some("AL")),
    ("356", Some("MT")),
    ("357", Some("CY")),
    ("358", Some("FI")),
    ("35818", Some("AX")),
    ("359", Some("BG")),
    ("36", Some("HU")),
    ("370", Some("LT")),
    ("371", Some("LV")),
    ("372", Some("EE")),
    ("373", Some("MD")),
    ("374", Some("AM")),
    ("375", Some("BY")),
    ("376", Some("AD")),
    ("377", Some("MC")),
    ("378", Some("SM")),
    ("379", Some("VA")),
    ("380", Some("UA")),
    ("381", Some("RS")),
    ("382", Some("ME")),
    ("383", Some("XK")),
    ("385", Some("HR")),
    ("386", Some("SI")),
    ("387", Some("BA")),
    ("389", Some("MK")),
    ("39", Some("IT")),
    ("3906698", Some("VA")),
    ("40", Some("RO")),
    ("41", Some("CH")),
    ("420", Some("CZ")),
    ("421", Some("SK")),
    ("423", Some("LI")),
    ("43", Some("AT")),
    ("44", Some("GB")),
    ("441481", Some("GG")),
    ("441534", Some("JE")),
    ("441624", Some("IM")),
    ("45", Some("DK")),
    ("46", Some("SE")),
    ("47", Some("NO")),
    ("4779", Some("SJ")),
    ("48", Some("PL")),
    ("49", Some("DE")),
    // Zone 5: the Americas south of NANP.
    ("500", Some("FK")),
    ("501", Some("BZ")),
    ("502", Some("GT")),
    ("503", Some("SV")),
    ("504", Some("HN")),
    ("505", Some("NI")),
    ("506", Some("CR")),
    ("507", Some("PA")),
    ("508", Some("PM")),
    ("509", Some("HT")),
    ("51", Some("PE")),
    ("52", Some("MX")),
    ("53", Some("CU")),
    ("54", Some("AR")),
    ("55", Some("BR")),
    ("56", Some("CL")),
    ("57", Some("CO")),
    ("58", Some("VE")),
    ("590", Some("GP")),
    ("591", Some("BO")),
    ("592", Some("GY")),
    ("593", Some("EC")),
    ("594", Some("GF")),
    ("595", Some("PY")),
    ("596", Some("MQ")),
    ("597", Some("SR")),
    ("598", Some("UY")),
    ("599", Some("CW")),
    ("5997", Some("BQ")),
    // Zone 6: South-East Asia and Oceania.
    ("60", Some("MY")),
    ("61", Some("AU")),
    ("62", Some("ID")),
    ("63", Some("PH")),
    ("64", Some("NZ")),
    ("65", Some("SG")),
    ("66", Some("TH")),
    ("670", Some("TL")),
    ("672", Some("NF")),
    ("673", Some("BN")),
    ("674", Some("NR")),
    ("675", Some("PG")),
    ("676", Some("TO")),
    ("677", Some("SB")),
    ("678", Some("VU")),
    ("679", Some("FJ")),
    ("680", Some("PW")),
    ("681", Some("WF")),
    ("682", Some("CK")),
    ("683", Some("NU")),
    ("685", Some("WS")),
    ("686", Some("KI")),
    ("687", Some("NC")),
    ("688", Some("TV")),
    ("689", Some("PF")),
    ("690", Some("TK")),
    ("691", Some("FM")),
    ("692", Some("MH")),
    // Zone 7: Russia and Kazakhstan.
    ("7", Some("RU")),
    ("76", Some("KZ")),
    ("77", Some("KZ")),
    // Zone 8: East Asia and international services.
    ("800", None),
    ("808", None),
    ("81", Some("JP")),
    ("82", Some("KR")),
    ("84", Some("VN")),
    ("850", Some("KP")),
    ("852", Some("HK")),
    ("853", Some("MO")),
    ("855", Some("KH")),
    ("856", Some("LA")),
    ("86", Some("CN")),
    ("870", None),
    ("878", None),
    ("880", Some("BD")),
    ("881", None),
    ("882", None),
    ("883", None),
    ("886", Some("TW")),
    ("888", None),
    // Zone 9: West, Central and South Asia, Middle East.
    ("90", Some("TR")),
    ("91", Some("IN")),
    ("92", Some("PK")),
    ("93", Some("AF")),
    ("94", Some("LK")),
    ("95", Some("MM")),
    ("960", Some("MV")),
    ("961", Some("LB")),
    ("962", Some("JO")),
    ("963", Some("SY")),
    ("964", Some("IQ")),
    ("965", Some("KW")),
    ("966", Some("SA")),
    ("967", Some("YE")),
    ("968", Some("OM")),
    ("970", Some("PS")),
    ("971", Some("AE")),
    ("972", Some("IL")),
    ("973", Some("BH")),
    ("974", Some("QA")),
    ("975", Some("BT")),
    ("976", Some("MN")),
    ("977", Some("NP")),
    ("979", None),
    ("98", Some("IR")),
    ("991", None),
    ("992", Some("TJ")),
    ("993", Some("TM")),
    ("994", Some("AZ")),
    ("995", Some("GE")),
    ("996", Some("KG")),
    ("998", Some("UZ")),
];

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn accepts_common_spellings() {
        for input in [
            "+628123456789",
            "628123456789",
            "+62 812 345 6789",
            "+62-812-3456-789",
            "(+62) 812.3456.789",
            "62 (812) 345-6789",
            "  +628123456789\t",
            "+ 62 812 3456 789",
        ] {
            let p = canonicalize(input).unwrap_or_else(|e| panic!("{input:?}: {e}"));
            assert_eq!(p.digits(), "628123456789", "{input:?}");
        }
    }

    #[test]
    fn a_number_with_a_fraction_is_not_a_phone_number() {
        for input in [
            "14155550101.0",
            "+14155550101.0",
            "14155550101.00",
            "14155550101.",
            " 14155550101.0 ",
        ] {
            assert_eq!(canonicalize(input), Err(PhoneError::Fraction), "{input:?}");
        }
        // Dotted groups are still separators.
        assert_eq!(canonicalize("415.555.0100").unwrap().digits(), "4155550100");
        assert_eq!(
            canonicalize("+1 415.5550100").unwrap().digits(),
            "14155550100"
        );
    }

    #[test]
    fn boundaries_of_length() {
        assert!(canonicalize("12345678").is_ok());
        assert_eq!(
            canonicalize("1234567"),
            Err(PhoneError::TooShort { count: 7 })
        );
        assert!(canonicalize("123456789012345").is_ok());
        assert_eq!(
            canonicalize("1234567890123456"),
            Err(PhoneError::TooLong { count: 16 })
        );
        assert_eq!(
            canonicalize(&"9".repeat(1000)),
            Err(PhoneError::TooLong { count: 1000 })
        );
    }

    #[test]
    fn refuses_bad_input_with_reason() {
        assert_eq!(canonicalize(""), Err(PhoneError::Empty));
        assert_eq!(canonicalize("   "), Err(PhoneError::Empty));
        assert_eq!(canonicalize("+"), Err(PhoneError::NoDigits));
        assert_eq!(canonicalize("(--)"), Err(PhoneError::NoDigits));
        assert_eq!(
            canonicalize("62812abc456"),
            Err(PhoneError::InvalidCharacter {
                ch: 'a',
                position: 6
            })
        );
        assert_eq!(
            canonicalize("62+8123456789"),
            Err(PhoneError::MisplacedPlus)
        );
        assert_eq!(
            canonicalize("++628123456789"),
            Err(PhoneError::MisplacedPlus)
        );
        assert_eq!(canonicalize("08123456789"), Err(PhoneError::LeadingZero));
        assert_eq!(canonicalize("+0 8123456789"), Err(PhoneError::LeadingZero));
        assert!(
            canonicalize("٦٢٨١٢٣٤٥٦٧٨٩").is_err(),
            "non-ASCII digits are refused"
        );
        let msg = canonicalize("62812abc456").unwrap_err().to_string();
        assert!(msg.contains("'a'") && msg.contains("position 6"), "{msg}");
        assert!(
            !canonicalize("08123")
                .unwrap_err()
                .to_string()
                .contains('\n')
        );
    }

    #[test]
    fn countries_by_longest_prefix() {
        let c = |s: &str| canonicalize(s).unwrap().country();
        assert_eq!(c("+628123456789"), Some("ID"));
        assert_eq!(c("+14155550100"), Some("US"));
        assert_eq!(c("+14165550100"), Some("CA"));
        assert_eq!(c("+18765550100"), Some("JM"));
        assert_eq!(c("+79161234567"), Some("RU"));
        assert_eq!(c("+77011234567"), Some("KZ"));
        assert_eq!(c("+447911123456"), Some("GB"));
        assert_eq!(c("+919812345678"), Some("IN"));
        assert_eq!(c("+5511912345678"), Some("BR"));
        assert_eq!(c("+9779812345678"), Some("NP"));
        assert_eq!(c("+35812345678"), Some("FI"));
        assert_eq!(c("+2348012345678"), Some("NG"));
        assert_eq!(c("+80012345678"), None);
        assert_eq!(c("+99912345678"), None);
        assert_eq!(
            canonicalize("+80012345678").unwrap().pricing_country(),
            "DEFAULT"
        );
        assert_eq!(
            canonicalize("+628123456789").unwrap().pricing_country(),
            "ID"
        );
    }

    #[test]
    fn calling_code_table_is_well_formed() {
        let mut seen = std::collections::HashSet::new();
        for (prefix, country) in CALLING_CODES {
            assert!(!prefix.is_empty() && prefix.bytes().all(|b| b.is_ascii_digit()));
            assert!(!prefix.starts_with('0'));
            assert!(seen.insert(*prefix), "duplicate prefix {prefix}");
            if let Some(c) = country {
                assert!(c.len() == 2 && c.bytes().all(|b| b.is_ascii_uppercase()));
            }
        }
        // Every single-digit zone start that is a country code resolves.
        for d in ["1", "7"] {
            assert!(country_for_digits(&format!("{d}0000000")).is_some());
        }
    }

    #[test]
    fn prefix_matching_and_display() {
        let p = canonicalize("+1 (415) 555-0100").unwrap();
        assert!(p.starts_with_prefix("1"));
        assert!(p.starts_with_prefix("+1415"));
        assert!(!p.starts_with_prefix("62"));
        assert!(!p.starts_with_prefix(""));
        assert_eq!(p.to_string(), "14155550100");
        assert_eq!(p.e164(), "+14155550100");
        let json = serde_json::to_string(&p).unwrap();
        assert_eq!(json, "\"14155550100\"");
        let back: PhoneNumber = serde_json::from_str("\"+1 415 555 0100\"").unwrap();
        assert_eq!(back, p);
        assert!(serde_json::from_str::<PhoneNumber>("\"abc\"").is_err());
    }

    proptest! {
        #[test]
        fn never_panics(s in "\\PC*") {
            let _ = canonicalize(&s);
        }

        #[test]
        fn idempotent(s in "[+ ()\\-.0-9]{0,24}") {
            if let Ok(p) = canonicalize(&s) {
                let again = canonicalize(p.digits()).expect("canonical form parses");
                prop_assert_eq!(&again, &p);
                prop_assert_eq!(canonicalize(&p.e164()).unwrap(), p.clone());
                prop_assert!((MIN_DIGITS..=MAX_DIGITS).contains(&p.digits().len()));
                prop_assert!(p.digits().bytes().all(|b| b.is_ascii_digit()));
                prop_assert!(!p.digits().starts_with('0'));
            }
        }

        #[test]
        fn separators_do_not_matter(d in "[1-9][0-9]{7,14}", sep in "[ .\\-]") {
            let spaced: String = d.chars().flat_map(|c| [c, sep.chars().next().unwrap()]).collect();
            prop_assert_eq!(canonicalize(&spaced).unwrap().digits().to_string(), d.clone());
            let plus = format!("+{d}");
            prop_assert_eq!(canonicalize(&plus).unwrap().digits().to_string(), d);
        }
    }
}
