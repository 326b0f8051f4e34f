//! A changed number never makes a customer easier to reach: against real Postgres, the new
//! number of a forgotten customer stays suppressed, even after its own START.

use chrono::Utc;
use warden_core::customers::number_change::link;
use warden_core::customers::privacy::forget;
use warden_core::customers::{OptScope, apply_opt_change, is_suppressed};
use warden_rules::keywords::OptChange;
use warden_rules::phone::canonicalize;

use crate::common::TestCore;

const ACTOR: &str = "test";

#[tokio::test]
async fn the_new_number_of_a_forgotten_customer_stays_suppressed() {
    let h = TestCore::builder().pool_size(4).build().await;
    let pg = h.pg().clone();
    let old = canonicalize("+6281100000001").unwrap();
    let new = canonicalize("+6281100000002").unwrap();
    let untouched = canonicalize("+6281100000003").unwrap();

    forget(&pg, &old, ACTOR).await.unwrap();
    let mut c = pg.get().await.unwrap();
    assert!(link(&mut c, &old, &new, Utc::now(), ACTOR).await.unwrap());
    assert!(is_suppressed(&mut c, &new).await.unwrap());

    // The new number's own START changes nothing.
    let changed = apply_opt_change(
        &mut c,
        "default",
        &new,
        OptChange::Resume,
        OptScope::All,
        "keyword",
        ACTOR,
        Utc::now(),
    )
    .await
    .unwrap();
    assert!(!changed, "a START lifted an inherited suppression");
    let customer = warden_core::customers::find(&mut c, &new)
        .await
        .unwrap()
        .unwrap();
    assert!(!customer.opt_in_marketing && !customer.opt_in_utility);

    // A number that was never forgotten inherits no suppression.
    assert!(
        link(
            &mut c,
            &untouched,
            &canonicalize("+6281100000004").unwrap(),
            Utc::now(),
            ACTOR
        )
        .await
        .unwrap()
    );
    assert!(
        !is_suppressed(&mut c, &canonicalize("+6281100000004").unwrap())
            .await
            .unwrap()
    );
}
