//! A customer's time zone from their number (quiet hours with `timezone: customer`).
//!
//! The country comes from the calling code ([`PhoneNumber::country`]); the zone is one
//! representative IANA zone per country (its capital's or most populous region's), with
//! daylight saving from the tz database. **Limitation:** countries spanning several zones
//! (US, CA, MX, BR, RU, AU, ID, KZ, ...) get one zone for every number, so a customer in
//! another region of such a country is judged by that zone's clock (e.g. every +1 number
//! but Canadian area codes by America/New_York). A country not in the table is judged in
//! UTC.

use chrono_tz::Tz;

use crate::phone::PhoneNumber;

/// ISO 3166-1 alpha-2 -> representative IANA zone.
static ZONES: &[(&str, Tz)] = &[
    ("AE", Tz::Asia__Dubai),
    ("AR", Tz::America__Argentina__Buenos_Aires),
    ("AT", Tz::Europe__Vienna),
    ("AU", Tz::Australia__Sydney),
    ("BD", Tz::Asia__Dhaka),
    ("BE", Tz::Europe__Brussels),
    ("BR", Tz::America__Sao_Paulo),
    ("CA", Tz::America__Toronto),
    ("CH", Tz::Europe__Zurich),
    ("CL", Tz::America__Santiago),
    ("CN", Tz::Asia__Shanghai),
    ("CO", Tz::America__Bogota),
    ("CZ", Tz::Europe__Prague),
    ("DE", Tz::Europe__Berlin),
    ("DK", Tz::Europe__Copenhagen),
    ("DZ", Tz::Africa__Algiers),
    ("EC", Tz::America__Guayaquil),
    ("EG", Tz::Africa__Cairo),
    ("ES", Tz::Europe__Madrid),
    ("ET", Tz::Africa__Addis_Ababa),
    ("FI", Tz::Europe__Helsinki),
    ("FR", Tz::Europe__Paris),
    ("GB", Tz::Europe__London),
    ("GH", Tz::Africa__Accra),
    ("GR", Tz::Europe__Athens),
    ("HK", Tz::Asia__Hong_Kong),
    ("HU", Tz::Europe__Budapest),
    ("ID", Tz::Asia__Jakarta),
    ("IE", Tz::Europe__Dublin),
    ("IL", Tz::Asia__Jerusalem),
    ("IN", Tz::Asia__Kolkata),
    ("IT", Tz::Europe__Rome),
    ("JP", Tz::Asia__Tokyo),
    ("KE", Tz::Africa__Nairobi),
    ("KR", Tz::Asia__Seoul),
    ("KZ", Tz::Asia__Almaty),
    ("LK", Tz::Asia__Colombo),
    ("MA", Tz::Africa__Casablanca),
    ("MX", Tz::America__Mexico_City),
    ("MY", Tz::Asia__Kuala_Lumpur),
    ("NG", Tz::Africa__Lagos),
    ("NL", Tz::Europe__Amsterdam),
    ("NO", Tz::Europe__Oslo),
    ("NP", Tz::Asia__Kathmandu),
    ("NZ", Tz::Pacific__Auckland),
    ("PE", Tz::America__Lima),
    ("PH", Tz::Asia__Manila),
    ("PK", Tz::Asia__Karachi),
    ("PL", Tz::Europe__Warsaw),
    ("PT", Tz::Europe__Lisbon),
    ("RO", Tz::Europe__Bucharest),
    ("RU", Tz::Europe__Moscow),
    ("SA", Tz::Asia__Riyadh),
    ("SE", Tz::Europe__Stockholm),
    ("SG", Tz::Asia__Singapore),
    ("TH", Tz::Asia__Bangkok),
    ("TR", Tz::Europe__Istanbul),
    ("TW", Tz::Asia__Taipei),
    ("UA", Tz::Europe__Kyiv),
    ("US", Tz::America__New_York),
    ("VE", Tz::America__Caracas),
    ("VN", Tz::Asia__Ho_Chi_Minh),
    ("ZA", Tz::Africa__Johannesburg),
];

/// The zone quiet hours use for `phone` under `timezone: customer` (UTC when its country
/// is not in the table; see the module docs for countries with several zones).
pub fn customer_zone(phone: &PhoneNumber) -> Tz {
    phone
        .country()
        .and_then(|c| ZONES.iter().find(|(code, _)| *code == c))
        .map_or(Tz::UTC, |(_, tz)| *tz)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn zone(digits: &str) -> Tz {
        customer_zone(&crate::phone::canonicalize(digits).unwrap())
    }

    #[test]
    fn zones_by_country() {
        assert_eq!(zone("+6281234567890"), Tz::Asia__Jakarta);
        assert_eq!(zone("+447911123456"), Tz::Europe__London);
        assert_eq!(zone("+12025550123"), Tz::America__New_York);
        assert_eq!(zone("+14165550123"), Tz::America__Toronto);
        assert_eq!(zone("+9779812345678"), Tz::Asia__Kathmandu);
        // A country not in the table: UTC.
        assert_eq!(zone("+3545512345"), Tz::UTC);
    }

    #[test]
    fn table_is_sorted_and_unique() {
        assert!(ZONES.windows(2).all(|w| w[0].0 < w[1].0));
    }
}
