//! Unknown outcomes: a platform call that timed out or was cut, or a claim whose
//! dispatcher died. Such a row stays `sending` (the platform may have the message, and
//! has no idempotency key), held for its status webhook; [`super::next_step`] decides when it
//! is resent, and [`release_dead_claim`] puts it back to `queued`, audited.

use std::time::Duration;

use diesel::sql_types::{BigInt, Text, Uuid as SqlUuid};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use futures::FutureExt;
use uuid::Uuid;
use warden_store::PgPool;
use warden_store::tx::{Abort, transact};

use super::DeliveryError;
use super::next_step::Why;
use crate::sql::millis;

/// A call whose outcome is unknown (timeout, connection cut mid-request): end `owner`'s
/// lease now, keeping the row `sending`, so it is settled like a dead claim
/// (`unknown_since` set). No error is stored: the status webhook may yet say `sent`.
/// False: the row moved on meanwhile (its status webhook came first, or another replica
/// took the claim over).
pub async fn end_lease(pg: &PgPool, id: Uuid, owner: &str) -> Result<bool, DeliveryError> {
    let mut conn = pg.get().await?;
    let n = diesel::sql_query(
        "UPDATE messages SET lease_until = now(), lease_owner = NULL, updated_at = now(),
                unknown_since = now()
          WHERE id = $1 AND status = 'sending' AND lease_owner = $2",
    )
    .bind::<SqlUuid, _>(id)
    .bind::<Text, _>(owner)
    .execute(&mut conn)
    .await?;
    Ok(n == 1)
}

/// A claim whose lease ended while its row is still `sending` (its dispatcher died, or
/// stalled past the lease): from now on an unknown outcome, settled by the resend rule.
/// Marks it once (`unknown_since` = when the lease ended; `updated_at`, the claim time the
/// evidence rule measures from, is kept). True: this call marked it.
pub async fn adopt_dead_claim(pg: &PgPool, id: Uuid) -> Result<bool, DeliveryError> {
    let mut conn = pg.get().await?;
    let n = diesel::sql_query(
        "UPDATE messages SET unknown_since = COALESCE(lease_until, updated_at), lease_owner = NULL
          WHERE id = $1 AND status = 'sending' AND unknown_since IS NULL
            AND COALESCE(lease_until, updated_at) <= now()",
    )
    .bind::<SqlUuid, _>(id)
    .execute(&mut conn)
    .await?;
    Ok(n == 1)
}

/// An unknown outcome that moved on without a resend (its status webhook came): clear the
/// mark. True: this call cleared it (so the resolution is counted once).
pub async fn clear_resolved(pg: &PgPool, id: Uuid) -> Result<bool, DeliveryError> {
    let mut conn = pg.get().await?;
    let n = diesel::sql_query(
        "UPDATE messages SET unknown_since = NULL
          WHERE id = $1 AND unknown_since IS NOT NULL AND status <> 'sending'",
    )
    .bind::<SqlUuid, _>(id)
    .execute(&mut conn)
    .await?;
    Ok(n == 1)
}

/// An unknown outcome whose settle period passed with no status webhook: back to `queued`
/// (due now), with an audit row naming `why` (written as `actor`), if it is still
/// `sending` with its lease ended that long ago. False: the row moved on meanwhile (its
/// webhook came, or another replica or the sweep took it).
pub async fn release_dead_claim(
    pg: &PgPool,
    id: Uuid,
    settle: Duration,
    why: Why,
    actor: &'static str,
) -> Result<bool, DeliveryError> {
    let released = transact(pg, "release_dead_claim", move |c| {
        async move {
            let n = diesel::sql_query(
                "UPDATE messages
                    SET status = 'queued', lease_owner = NULL, lease_until = NULL,
                        next_attempt_at = NULL, unknown_since = NULL, updated_at = now()
                  WHERE id = $1 AND status = 'sending'
                    AND COALESCE(lease_until, updated_at) + $2 * interval '1 millisecond' <= now()",
            )
            .bind::<SqlUuid, _>(id)
            .bind::<BigInt, _>(millis(settle))
            .execute(c)
            .await?;
            if n == 1 {
                audit_resend(c, id, settle, why, actor).await?;
            }
            Ok::<_, Abort<std::convert::Infallible>>(n == 1)
        }
        .boxed()
    })
    .await?;
    Ok(released)
}

/// The audit row of a resent unknown outcome.
pub(super) async fn audit_resend(
    c: &mut AsyncPgConnection,
    id: Uuid,
    settle: Duration,
    why: Why,
    actor: &str,
) -> diesel::QueryResult<()> {
    let reason = match why {
        Why::Evidence => {
            "outcome unknown (the dispatcher stopped, or the call timed out) and no status webhook came while later ones did"
        }
        Why::MaxWait => {
            "outcome unknown (the dispatcher stopped, or the call timed out) and no status webhook came within DISPATCH_UNKNOWN_MAX_WAIT"
        }
    };
    warden_store::audit::record(
        c,
        actor,
        "resend_after_unknown_outcome",
        "message",
        &id.to_string(),
        serde_json::json!({
            "reason": reason,
            "rule": why.label(),
            "settle_ms": millis(settle),
        }),
    )
    .await
}
