//! What a campaign (or any scope of messages) cost: estimated beside actual, by category.

use crate::gateway::Gateway;
use crate::schema::*;

impl Gateway {
    /// The campaign's cost report (None when it cannot be read: the rest still answers).
    pub(super) async fn campaign_cost(&self, id: uuid::Uuid) -> Option<CostReport> {
        let scope = warden_core::account::pricing::ReportScope::Campaign(id);
        match self.cost_report(scope).await {
            Ok(report) => Some(report),
            Err(e) => {
                tracing::warn!(error = %e, "campaign cost report unavailable");
                None
            }
        }
    }

    /// Estimated beside actual cost of the messages of `scope`, by category.
    pub(crate) async fn cost_report(
        &self,
        scope: warden_core::account::pricing::ReportScope,
    ) -> Result<CostReport, warden_store::DbError> {
        // A limited caller's spend is its numbers' only.
        let lines = warden_core::account::pricing::report(&self.core(), scope).await?;
        let e4 = |n: i64| crate::tools::account::decimal_e4(i128::from(n));
        let currency = self.currency().await;
        Ok(CostReport {
            currency,
            estimated: e4(lines.iter().map(|l| l.estimated_e4).sum()),
            actual: e4(lines.iter().map(|l| l.actual_e4).sum()),
            by_category: lines
                .into_iter()
                .map(|l| CostLineOut {
                    estimated: e4(l.estimated_e4),
                    actual: e4(l.actual_e4),
                    category: l.category,
                    delivered: l.delivered,
                    estimated_billable: l.estimated_billable,
                    reported: l.reported,
                    actual_billable: l.actual_billable,
                    free_customer_service: l.free_customer_service,
                    free_entry_point: l.free_entry_point,
                })
                .collect(),
        })
    }

    /// The installed rate card's currency (USD when none says).
    pub(crate) async fn currency(&self) -> String {
        warden_core::account::rate_card::installed_currency(self.core().pg())
            .await
            .unwrap_or_else(|| "USD".to_owned())
    }
}
