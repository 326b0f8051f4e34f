//! Delivery statuses of a batch (`crate::delivery::statuses`): every message they mention
//! found with one query and the ones that only move forward applied together
//! ([`Batch::load`]); each of the others in its place ([`Batch::apply_next`]: a failure is
//! decided by `crate::delivery::platform_errors` exactly as the dispatcher decides the same
//! error answered to its call); what the platform charged, one statement at the end
//! ([`Batch::finish`]).

use diesel::QueryResult;
use diesel_async::AsyncPgConnection;
use uuid::Uuid;

use super::{Body, Context, Effects, Event, Origin};
use crate::account::pricing::{self, ReportedPricing};
use crate::delivery::statuses::{self, Planned, StatusApplied, StatusTargets, StatusUpdate};

/// A delivery status, and what the platform charged for the message when it said.
#[derive(Clone, Debug)]
pub struct StatusReport<'a> {
    pub update: StatusUpdate<'a>,
    pub pricing: Option<ReportedPricing<'a>>,
}

/// A batch's statuses between [`Batch::load`] and [`Batch::finish`].
pub struct Batch<'a> {
    targets: StatusTargets,
    planned: std::vec::IntoIter<Planned>,
    /// Every report of the batch, stored beside its message in one statement at the end.
    pricing: Vec<(Uuid, ReportedPricing<'a>)>,
}

impl<'a> Batch<'a> {
    /// Find the messages the statuses among `events` are about and apply the ones that
    /// only move messages forward through sent/delivered/read; the others (and every status
    /// of their messages) wait for [`Batch::apply_next`] in their place.
    pub async fn load(
        c: &mut AsyncPgConnection,
        events: &[Event<'a>],
        effects: &mut Effects,
    ) -> QueryResult<Self> {
        let updates: Vec<StatusUpdate> = events
            .iter()
            .filter_map(|e| match &e.body {
                Body::Status(s) => Some(s.update),
                _ => None,
            })
            .collect();
        effects.status_through = effects
            .status_through
            .max(updates.iter().map(|s| s.at).max());
        let mut targets = StatusTargets::load(c, &updates).await?;
        let planned = statuses::apply_all(c, &updates, &mut targets).await?;
        Ok(Batch {
            targets,
            planned: planned.into_iter(),
            pricing: Vec::new(),
        })
    }

    /// The next status of the batch (call once per status, in order); returns whether it
    /// was about a message of ours.
    pub async fn apply_next(
        &mut self,
        c: &mut AsyncPgConnection,
        ctx: &Context<'_>,
        origin: Origin<'_>,
        s: &StatusReport<'a>,
        effects: &mut Effects,
    ) -> QueryResult<bool> {
        let plan = self.planned.next().expect("one plan per status");
        let message = plan.resolved.map(|r| self.targets.message_at(&r));
        if let (Some(p), Some((id, _))) = (&s.pricing, message) {
            self.pricing.push((id, p.clone()));
        }
        let applied = match (plan.done, plan.resolved) {
            (Some(done), _) => done,
            (None, Some(resolved)) => {
                statuses::apply_resolved(
                    c,
                    &s.update,
                    resolved,
                    &self.targets,
                    ctx.retry,
                    ctx.actor,
                )
                .await?
            }
            (None, None) => StatusApplied::Ignored,
        };
        if !matches!(applied, StatusApplied::Ignored)
            && let Some((_, customer)) = message
        {
            effects
                .hint_status
                .insert((customer.to_string(), origin.keys(ctx.senders).sender));
        }
        Ok(match applied {
            StatusApplied::Ignored => false,
            StatusApplied::Applied => true,
            StatusApplied::Requeued { message_id } => {
                effects.requeued.push(message_id);
                true
            }
        })
    }

    /// Store what the platform charged for the batch's messages.
    pub async fn finish(self, c: &mut AsyncPgConnection) -> QueryResult<()> {
        pricing::record_many(c, &self.pricing).await
    }
}
