//! Campaigns as a caller reaches them: read and moved only when every number the campaign
//! goes out from is in the caller's reach ([`crate::reach`]); otherwise it answers as a
//! campaign that does not exist and nothing changes. A campaign's numbers never change
//! after it is created, so the check may come before the transition's transaction.

use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use uuid::Uuid;
use warden_store::schema::campaigns;

use super::{CampaignError, CampaignView, Moved};
use crate::Core;

impl Core {
    /// `NotFound` unless campaign `id` exists and all its numbers are in reach.
    async fn admit_campaign(&self, id: Uuid) -> Result<(), CampaignError> {
        if !self.reach().is_limited() {
            return Ok(());
        }
        let mut conn = self.pg().get().await?;
        let keys: Option<(String, Option<Vec<String>>)> = campaigns::table
            .find(id)
            .select((campaigns::sender_id, campaigns::senders))
            .first(&mut conn)
            .await
            .optional()
            .map_err(warden_store::DbError::from)?;
        let Some((sender, senders)) = keys else {
            return Err(CampaignError::NotFound(id));
        };
        let all =
            std::iter::once(sender.as_str()).chain(senders.iter().flatten().map(String::as_str));
        self.admit(format_args!("campaign {id}"), all)
            .map_err(|_| CampaignError::NotFound(id))
    }

    /// get_campaign as this caller reaches it.
    pub async fn campaign(&self, id: Uuid) -> Result<CampaignView, CampaignError> {
        self.admit_campaign(id).await?;
        super::get(self.pg(), id).await
    }

    /// pause_campaign as this caller reaches it, attributed to this view's actor.
    pub async fn pause_campaign(&self, id: Uuid) -> Result<Moved, CampaignError> {
        self.admit_campaign(id).await?;
        super::pause(self.pg(), id, self.actor()).await
    }

    /// resume_campaign as this caller reaches it.
    pub async fn resume_campaign(&self, id: Uuid) -> Result<Moved, CampaignError> {
        self.admit_campaign(id).await?;
        super::resume(self.pg(), id, self.actor()).await
    }

    /// cancel_campaign as this caller reaches it.
    pub async fn cancel_campaign(
        &self,
        id: Uuid,
        reason: Option<&str>,
    ) -> Result<Moved, CampaignError> {
        self.admit_campaign(id).await?;
        super::cancel(self.pg(), id, reason, self.actor()).await
    }
}
