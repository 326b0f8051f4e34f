//! A customer's cart: the platform's inbound `order` (`{catalog_id, text?, product_items
//! [{product_retailer_id, quantity, item_price, currency}]}`) read into [`Order`], and its
//! totals per currency (Σ quantity × item_price).
//!
//! Prices are money: they are summed as exact decimals ([`Amount`], an integer count of
//! 10^-scale units), never as floats, so 3 × 0.1 is 0.3 and not 0.30000000000000004. A
//! price the platform sent as a JSON number is read from its shortest decimal spelling,
//! which is the number it wrote. An order that does not fit this shape is refused with
//! the reason ([`OrderError`]); the caller keeps it as received and shows it raw.

use std::collections::BTreeMap;
use std::fmt;

use serde_json::Value;

/// Most decimal places a price may have (the platform's prices have at most a few).
pub const MAX_SCALE: u32 = 6;
/// Largest quantity of one item (far above any real cart; keeps totals in range).
pub const MAX_QUANTITY: i64 = 1_000_000;
/// Most items read from one order.
pub const MAX_ITEMS: usize = 100;

/// An exact non-negative decimal: `units` × 10^-`scale`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Amount {
    /// The value in 10^-scale units.
    pub units: i128,
    /// Decimal places.
    pub scale: u32,
}

impl Amount {
    /// Zero.
    pub const ZERO: Amount = Amount { units: 0, scale: 0 };

    /// Reads `12`, `12.5`, `0.10` (a JSON number or a numeric string); refuses a sign,
    /// an exponent, more than [`MAX_SCALE`] places or more than 18 integer digits.
    pub fn parse(v: &Value) -> Option<Amount> {
        let s = match v {
            // serde_json's Display of a number is its shortest round-trip spelling.
            Value::Number(n) => n.to_string(),
            Value::String(s) => s.trim().to_owned(),
            _ => return None,
        };
        let (int, frac) = s.split_once('.').unwrap_or((&s, ""));
        let digits = |p: &str| p.bytes().all(|b| b.is_ascii_digit());
        if int.is_empty() || int.len() > 18 || !digits(int) || !digits(frac) {
            return None;
        }
        if frac.len() > MAX_SCALE as usize {
            return None;
        }
        let units: i128 = format!("{int}{frac}").parse().ok()?;
        Some(Amount {
            units,
            scale: frac.len() as u32,
        })
    }

    fn rescaled(self, scale: u32) -> i128 {
        self.units * 10i128.pow(scale - self.scale)
    }

    /// `self + other`, exact.
    pub fn plus(self, other: Amount) -> Amount {
        let scale = self.scale.max(other.scale);
        Amount {
            units: self.rescaled(scale) + other.rescaled(scale),
            scale,
        }
    }

    /// `self × n`, exact.
    pub fn times(self, n: i64) -> Amount {
        Amount {
            units: self.units * i128::from(n),
            scale: self.scale,
        }
    }

    /// The JSON number of this amount (from its exact decimal spelling, so the nearest
    /// float to the exact sum, never an accumulated float error).
    pub fn to_json(self) -> Value {
        self.to_string()
            .parse::<serde_json::Number>()
            .map(Value::Number)
            .unwrap_or(Value::Null)
    }
}

impl fmt::Display for Amount {
    /// `12.5`, `0.3`, `7` (trailing zeros of the fraction dropped).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let pow = 10i128.pow(self.scale);
        let (int, frac) = (self.units / pow, self.units % pow);
        if frac == 0 {
            return write!(f, "{int}");
        }
        let frac = format!("{frac:0width$}", width = self.scale as usize);
        write!(f, "{int}.{}", frac.trim_end_matches('0'))
    }
}

/// One line of a cart.
#[derive(Debug, Clone, PartialEq)]
pub struct OrderItem {
    /// The product's id in the catalog.
    pub product_retailer_id: String,
    /// How many (at least 1).
    pub quantity: i64,
    /// The price of one, as the platform sent it (a JSON number).
    pub item_price: Value,
    /// The price of one, exact.
    pub price: Amount,
    /// ISO 4217 code, upper-case (`USD`).
    pub currency: String,
}

/// A customer's cart.
#[derive(Debug, Clone, PartialEq)]
pub struct Order {
    /// The catalog the products are from.
    pub catalog_id: String,
    /// The note the customer wrote with the cart.
    pub text: Option<String>,
    /// The lines of the cart, in the order sent.
    pub items: Vec<OrderItem>,
}

/// Why an `order` object does not fit the platform's shape (the field, as sent).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{field}` {problem}")]
pub struct OrderError {
    /// `catalog_id`, `product_items[2].quantity`, ...
    pub field: String,
    /// What is wrong.
    pub problem: String,
}

fn bad(field: impl Into<String>, problem: &str) -> OrderError {
    OrderError {
        field: field.into(),
        problem: problem.to_owned(),
    }
}

fn string_of(v: Option<&Value>) -> Option<String> {
    match v? {
        Value::String(s) if !s.trim().is_empty() => Some(s.trim().to_owned()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

impl Order {
    /// Reads the platform's `order` object.
    pub fn parse(v: &Value) -> Result<Order, OrderError> {
        let obj = v
            .as_object()
            .ok_or_else(|| bad("order", "is not an object"))?;
        let catalog_id =
            string_of(obj.get("catalog_id")).ok_or_else(|| bad("catalog_id", "is missing"))?;
        let text = string_of(obj.get("text"));
        let lines = obj
            .get("product_items")
            .and_then(Value::as_array)
            .ok_or_else(|| bad("product_items", "is not a list"))?;
        if lines.is_empty() || lines.len() > MAX_ITEMS {
            return Err(bad(
                "product_items",
                &format!("has {} items; 1 to {MAX_ITEMS} are read", lines.len()),
            ));
        }
        let items = lines
            .iter()
            .enumerate()
            .map(|(i, line)| OrderItem::parse(i, line))
            .collect::<Result<_, _>>()?;
        Ok(Order {
            catalog_id,
            text,
            items,
        })
    }

    /// Σ quantity × item_price per currency, exact.
    pub fn totals(&self) -> BTreeMap<String, Amount> {
        let mut out: BTreeMap<String, Amount> = BTreeMap::new();
        for item in &self.items {
            let line = item.price.times(item.quantity);
            let sum = out.entry(item.currency.clone()).or_insert(Amount::ZERO);
            *sum = sum.plus(line);
        }
        out
    }
}

impl OrderItem {
    fn parse(i: usize, v: &Value) -> Result<OrderItem, OrderError> {
        let at = |f: &str| format!("product_items[{i}].{f}");
        let product_retailer_id = string_of(v.get("product_retailer_id"))
            .ok_or_else(|| bad(at("product_retailer_id"), "is missing"))?;
        let quantity = match v.get("quantity") {
            Some(Value::Number(n)) => n.as_i64(),
            Some(Value::String(s)) => s.trim().parse().ok(),
            _ => None,
        }
        .filter(|q| (1..=MAX_QUANTITY).contains(q))
        .ok_or_else(|| {
            bad(
                at("quantity"),
                &format!("is not a whole number from 1 to {MAX_QUANTITY}"),
            )
        })?;
        let raw_price = v.get("item_price").cloned().unwrap_or(Value::Null);
        let price = Amount::parse(&raw_price).ok_or_else(|| {
            bad(
                at("item_price"),
                &format!("is not a price (at most {MAX_SCALE} decimal places)"),
            )
        })?;
        let currency = string_of(v.get("currency"))
            .map(|c| c.to_ascii_uppercase())
            .filter(|c| c.len() == 3 && c.bytes().all(|b| b.is_ascii_alphabetic()))
            .ok_or_else(|| bad(at("currency"), "is not a three-letter currency code"))?;
        Ok(OrderItem {
            product_retailer_id,
            quantity,
            item_price: price.to_json(),
            price,
            currency,
        })
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::json;

    use super::*;

    fn order(items: Value) -> Value {
        json!({"catalog_id": "cat-1", "text": "for Friday", "product_items": items})
    }

    #[test]
    fn totals_are_exact_per_currency() {
        let o = Order::parse(&order(json!([
            {"product_retailer_id": "a", "quantity": 3, "item_price": 0.1, "currency": "USD"},
            {"product_retailer_id": "b", "quantity": 1, "item_price": 0.2, "currency": "usd"},
            {"product_retailer_id": "c", "quantity": 2, "item_price": "1500.50", "currency": "IDR"},
        ])))
        .unwrap();
        let totals = o.totals();
        assert_eq!(totals["USD"].to_string(), "0.5");
        assert_eq!(totals["IDR"].to_string(), "3001");
        assert_eq!(totals["USD"].to_json(), json!(0.5));
        assert_eq!(o.text.as_deref(), Some("for Friday"));
        assert_eq!(o.items[1].currency, "USD");
    }

    #[test]
    fn a_malformed_order_names_its_field() {
        let field = |v: Value| Order::parse(&v).unwrap_err().field;
        assert_eq!(field(json!({"product_items": []})), "catalog_id");
        assert_eq!(field(order(json!("x"))), "product_items");
        assert_eq!(field(order(json!([]))), "product_items");
        let line = |k: &str, v: Value| {
            let mut l = json!({"product_retailer_id": "a", "quantity": 1, "item_price": 2, "currency": "EUR"});
            l[k] = v;
            order(json!([l]))
        };
        assert_eq!(
            field(line("quantity", json!(0))),
            "product_items[0].quantity"
        );
        assert_eq!(
            field(line("quantity", json!(1.5))),
            "product_items[0].quantity"
        );
        assert_eq!(
            field(line("item_price", json!(-1))),
            "product_items[0].item_price"
        );
        assert_eq!(
            field(line("item_price", json!("1e3"))),
            "product_items[0].item_price"
        );
        assert_eq!(
            field(line("currency", json!("EURO"))),
            "product_items[0].currency"
        );
        assert_eq!(
            field(line("product_retailer_id", json!(null))),
            "product_items[0].product_retailer_id"
        );
    }

    #[test]
    fn amounts_print_without_trailing_zeros() {
        let a = Amount::parse(&json!("12.50")).unwrap();
        assert_eq!(a.to_string(), "12.5");
        assert_eq!(Amount::parse(&json!("0.05")).unwrap().to_string(), "0.05");
        assert_eq!(Amount::parse(&json!(7)).unwrap().to_string(), "7");
        assert_eq!(Amount::parse(&json!(".5")), None);
    }

    proptest! {
        /// Totals equal the sum computed in integer cents, whatever the order of lines.
        #[test]
        fn totals_match_integer_cents(
            lines in proptest::collection::vec(
                (0u64..10_000_000, 1i64..1000, proptest::sample::select(vec!["USD", "EUR", "IDR"])),
                1..40,
            )
        ) {
            let items: Vec<Value> = lines
                .iter()
                .enumerate()
                .map(|(i, (cents, q, c))| {
                    let price = format!("{}.{:02}", cents / 100, cents % 100);
                    json!({"product_retailer_id": format!("p{i}"), "quantity": q,
                           "item_price": price.parse::<f64>().unwrap(), "currency": c})
                })
                .collect();
            let o = Order::parse(&order(json!(items))).unwrap();
            let mut want: BTreeMap<String, i128> = BTreeMap::new();
            for (cents, q, c) in &lines {
                *want.entry((*c).to_owned()).or_default() += i128::from(*cents) * i128::from(*q);
            }
            let got = o.totals();
            prop_assert_eq!(got.len(), want.len());
            for (c, cents) in want {
                let a = got[&c];
                prop_assert_eq!(a.units * 100, cents * 10i128.pow(a.scale));
            }
        }
    }
}
