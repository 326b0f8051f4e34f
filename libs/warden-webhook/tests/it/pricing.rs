//! Pricing as data: the `pricing` object of status webhooks is stored per message (beside
//! it, not on it), and a campaign's cost report shows that actual cost beside the estimate
//! from the rate card.

use crate::common;

use common::*;
use diesel::QueryableByName;
use diesel::sql_types::{Bool, Nullable, Text};
use diesel_async::RunQueryDsl;
use serde_json::json;
use uuid::Uuid;

#[derive(QueryableByName, Debug, PartialEq)]
struct PricingRow {
    #[diesel(sql_type = Nullable<Bool>)]
    billable: Option<bool>,
    #[diesel(sql_type = Nullable<Text>)]
    pricing_model: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    category: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    pricing_type: Option<String>,
}

async fn pricing_of(h: &Harness, id: Uuid) -> Option<PricingRow> {
    let mut c = h.conn().await;
    diesel::sql_query(
        "SELECT billable, pricing_model, category, pricing_type FROM message_pricing WHERE message_id = $1",
    )
    .bind::<diesel::sql_types::Uuid, _>(id)
    .get_result(&mut c)
    .await
    .ok()
}

fn priced(wamid: &str, to: &str, id: Uuid, pricing: serde_json::Value) -> serde_json::Value {
    let mut item = status_item(wamid, "delivered", to, Some(&id.to_string()), None);
    item["pricing"] = pricing;
    envelope(vec![statuses_change(vec![item])])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_pricing_is_kept_per_message_and_the_cost_report_shows_actual_beside_estimated() {
    let h = Harness::start().await;
    let campaign = Uuid::new_v4();
    let (marketing_to, utility_to) = (phone(), phone());
    let (m_wamid, u_wamid) = (wamid(), wamid());
    // The utility customer wrote an hour ago: the care window was open at the send.
    h.deliver(&inbound(
        &utility_to,
        "where is my order?",
        now() - 3600,
        &wamid(),
    ))
    .await;
    let (m_id, u_id) = {
        let mut c = h.conn().await;
        diesel::sql_query(
            "INSERT INTO campaigns (id, name, campaign_type, status, deliver_at, template_name)
             VALUES ($1, 'cost', 'marketing', 'running', now(), 'warden_promo')",
        )
        .bind::<diesel::sql_types::Uuid, _>(campaign)
        .execute(&mut c)
        .await
        .unwrap();
        let m = outbound_message(
            &mut c,
            &marketing_to,
            "sent",
            Some(&m_wamid),
            Some(campaign),
        )
        .await;
        let u = outbound_message(&mut c, &utility_to, "sent", Some(&u_wamid), Some(campaign)).await;
        diesel::sql_query("UPDATE messages SET category = 'utility' WHERE id = $1")
            .bind::<diesel::sql_types::Uuid, _>(u)
            .execute(&mut c)
            .await
            .unwrap();
        diesel::sql_query("UPDATE customers SET country = 'ID' WHERE phone IN ($1, $2)")
            .bind::<Text, _>(&marketing_to)
            .bind::<Text, _>(&utility_to)
            .execute(&mut c)
            .await
            .unwrap();
        (m, u)
    };

    h.deliver(&priced(
        &m_wamid,
        &marketing_to,
        m_id,
        json!({"billable": true, "pricing_model": "PMP", "category": "marketing", "type": "regular"}),
    ))
    .await;
    h.deliver(&priced(
        &u_wamid,
        &utility_to,
        u_id,
        json!({"billable": false, "pricing_model": "PMP", "category": "utility",
               "type": "free_customer_service"}),
    ))
    .await;

    assert_eq!(
        pricing_of(&h, m_id).await,
        Some(PricingRow {
            billable: Some(true),
            pricing_model: Some("PMP".into()),
            category: Some("marketing".into()),
            pricing_type: Some("regular".into()),
        })
    );
    let u = pricing_of(&h, u_id).await.expect("utility pricing stored");
    assert_eq!(u.pricing_type.as_deref(), Some("free_customer_service"));
    assert_eq!(u.billable, Some(false));

    let lines = warden_core::account::pricing::campaign_report(&h.pg, campaign)
        .await
        .unwrap();
    let line = |cat: &str| lines.iter().find(|l| l.category == cat).unwrap().clone();
    // Indonesia's marketing rate of the built-in card: 0.0411 USD.
    let m = line("marketing");
    assert_eq!(
        (m.delivered, m.estimated_billable, m.estimated_e4),
        (1, 1, 411)
    );
    assert_eq!((m.reported, m.actual_billable, m.actual_e4), (1, 1, 411));
    // A utility template inside an open care window: free by the estimate and by the report.
    let u = line("utility");
    assert_eq!(
        (u.delivered, u.estimated_billable, u.estimated_e4),
        (1, 0, 0)
    );
    assert_eq!(
        (u.actual_billable, u.actual_e4, u.free_customer_service),
        (0, 0, 1)
    );
}
