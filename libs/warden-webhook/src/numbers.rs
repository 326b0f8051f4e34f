//! The platform's word on our numbers. The webhook server owns what Warden knows of each
//! sender's number (display number, quality rating, throughput level, name status): it
//! reads every number at start, learns display numbers from every event's metadata
//! (`ingest`), and asks the platform again when a quality update names a display number it
//! cannot tell (`GET /{waba_id}/phone_numbers`), then applies what waited.
//!
//! Never on a request's path: a POST is answered once stored; the platform is asked
//! afterwards. An unreachable platform is logged and asked again later; start-up never
//! waits for it.

use std::collections::HashSet;
use std::time::Duration;

use warden_core::Core;
use warden_core::account::number_facts::NumberFacts;
use warden_platform::PlatformClient;
use warden_platform::account::PhoneNumber;

/// How long one read of the platform may take.
const READ_TIMEOUT: Duration = Duration::from_secs(5);
/// How often quality updates still waiting for the platform's word are tried again.
pub const RETRY_EVERY: Duration = Duration::from_secs(15);

/// Read every sender's number now, then keep retrying what waits: spawned at start.
pub fn start(core: Core) {
    tokio::spawn(async move {
        read_all(&core).await;
        let mut tick = tokio::time::interval(RETRY_EVERY);
        tick.tick().await;
        loop {
            tick.tick().await;
            match core.deferred_quality_accounts().await {
                Ok(accounts) => {
                    for account in accounts {
                        ask_account(&core, &account).await;
                    }
                }
                Err(e) => tracing::debug!(error = %e, "cannot read the waiting quality updates"),
            }
        }
    });
}

/// After a commit: ask the platform about `accounts` (quality updates wait for it) and
/// `senders` (a rating to read again), off the answer's path.
pub(crate) fn ask_later(core: &Core, accounts: HashSet<String>, senders: HashSet<String>) {
    if accounts.is_empty() && senders.is_empty() {
        return;
    }
    let core = core.clone();
    tokio::spawn(async move {
        for account in &accounts {
            ask_account(&core, account).await;
        }
        let reads = futures::future::join_all(
            senders
                .iter()
                .filter_map(|key| Some((key, client_of(&core, key)?)))
                .map(|(key, client)| async move { read_one(key, &client).await }),
        )
        .await;
        record(&core, reads.into_iter().flatten().collect()).await;
    });
}

/// Every sender's number, each read with its own token (best effort: logged on failure).
async fn read_all(core: &Core) {
    let senders = core.senders();
    let keys: Vec<String> = senders
        .all()
        .iter()
        .map(|s| senders.key_of(s).sender)
        .collect();
    let reads = futures::future::join_all(
        keys.iter()
            .filter_map(|key| Some((key, client_of(core, key)?)))
            .map(|(key, client)| async move { read_one(key, &client).await }),
    )
    .await;
    let reads: Vec<(String, NumberFacts)> = reads.into_iter().flatten().collect();
    tracing::info!(
        senders = keys.len(),
        read = reads.len(),
        "numbers read from the platform"
    );
    record(core, reads).await;
    if let Ok(accounts) = core.deferred_quality_accounts().await {
        for account in accounts {
            resolve(core, &account).await;
        }
    }
}

/// Read the numbers of business `account` (with a token of one of its senders), record
/// those that are senders, then apply its waiting quality updates.
async fn ask_account(core: &Core, account: &str) {
    let senders = core.senders();
    let Some(first) = senders.of_business(account).next() else {
        return resolve(core, account).await;
    };
    let key = senders.key_of(first).sender;
    let Some(client) = client_of(core, &key) else {
        return;
    };
    match tokio::time::timeout(READ_TIMEOUT, client.phone_numbers()).await {
        Ok(Ok(numbers)) => {
            let reads: Vec<(String, NumberFacts)> = numbers
                .iter()
                .filter_map(|n| {
                    let sender = senders.by_phone_number_id(&n.id)?;
                    Some((senders.key_of(sender).sender, facts(n)))
                })
                .collect();
            record(core, reads.clone()).await;
            resolve(core, account).await;
            // A flag applied just now changed the rating; the platform's read is newer.
            record(core, reads).await;
        }
        Ok(Err(e)) => {
            tracing::warn!(account, error = %e, "cannot read the business's numbers from the platform; asking again later")
        }
        Err(_) => {
            tracing::warn!(
                account,
                "the platform did not answer the read of the business's numbers; asking again later"
            )
        }
    }
}

async fn resolve(core: &Core, account: &str) {
    match core.resolve_deferred_quality(account).await {
        Ok(r) if r.applied + r.not_ours + r.left > 0 => {
            tracing::info!(
                account,
                applied = r.applied,
                not_ours = r.not_ours,
                waiting = r.left,
                "quality updates matched to their number"
            )
        }
        Ok(_) => {}
        Err(e) => tracing::warn!(account, error = %e, "cannot apply the waiting quality updates"),
    }
}

async fn read_one(key: &str, client: &PlatformClient) -> Option<(String, NumberFacts)> {
    match tokio::time::timeout(READ_TIMEOUT, client.phone_number_quality()).await {
        Ok(Ok(n)) => Some((key.to_string(), facts(&n))),
        Ok(Err(e)) => {
            tracing::warn!(sender = key, error = %e, "cannot read the number from the platform");
            None
        }
        Err(_) => {
            tracing::warn!(
                sender = key,
                "the platform did not answer the read of the number"
            );
            None
        }
    }
}

async fn record(core: &Core, reads: Vec<(String, NumberFacts)>) {
    if let Err(e) = core.record_number_reads(&reads).await {
        tracing::warn!(error = %e, "cannot record what the platform said of the numbers");
    }
}

fn facts(n: &PhoneNumber) -> NumberFacts {
    NumberFacts {
        display_phone_number: n.display_phone_number.clone(),
        quality_rating: n.quality_rating.clone(),
        throughput_level: n.throughput.as_ref().map(|t| t.level.clone()),
        name_status: n.name_status.clone(),
        messaging_limit_tier: n.messaging_limit_tier.clone(),
    }
}

/// A client that calls the platform as the sender stored as `key` (built when needed: the
/// platform is asked seldom).
fn client_of(core: &Core, key: &str) -> Option<PlatformClient> {
    let sender = core.senders().by_key(key)?;
    match warden_service::platform::client_for(core.settings(), sender, Some(READ_TIMEOUT)) {
        Ok(c) => Some(c),
        Err(e) => {
            tracing::warn!(sender = key, error = %e, "no platform client for the sender");
            None
        }
    }
}
