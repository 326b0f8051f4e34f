//! Display numbers as webhooks and reads show them: what quality updates are matched on
//! (`number_facts`). Apart so `throughput` (a read of the number) and `number_facts` can
//! both record one.

use diesel::QueryResult;
use diesel::sql_types::{Array, Text};
use diesel_async::{AsyncPgConnection, RunQueryDsl};

/// The digits of a display number: reads write it "+1 555-010-0000", webhooks "15550100000".
pub fn digits(display: &str) -> String {
    display.chars().filter(char::is_ascii_digit).collect()
}

/// Record the display numbers webhooks carried, `(stored sender key, display number)`: one
/// statement, and no write where it is already known. Returns the rows changed.
pub async fn learn_displays(
    c: &mut AsyncPgConnection,
    seen: &[(String, String)],
) -> QueryResult<usize> {
    if seen.is_empty() {
        return Ok(0);
    }
    let (senders, displays): (Vec<&str>, Vec<&str>) =
        seen.iter().map(|(s, d)| (s.as_str(), d.as_str())).unzip();
    let digits: Vec<String> = displays.iter().map(|d| digits(d)).collect();
    diesel::sql_query(
        "INSERT INTO sender_numbers AS s (sender_id, display_phone_number, display_digits)
         SELECT * FROM unnest($1::text[], $2::text[], $3::text[])
         ON CONFLICT (sender_id) DO UPDATE SET
           display_phone_number = excluded.display_phone_number,
           display_digits = excluded.display_digits, updated_at = now()
         WHERE s.display_digits IS DISTINCT FROM excluded.display_digits",
    )
    .bind::<Array<Text>, _>(senders)
    .bind::<Array<Text>, _>(displays)
    .bind::<Array<Text>, _>(digits)
    .execute(c)
    .await
}
