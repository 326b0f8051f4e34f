//! Several numbers (docs/configuration.md, "Several numbers"): a senders file of a1
//! (default), a2 of business A and b1 of business B, and platform-sim serving the same
//! three numbers, each answering only its own token (any other is refused with 401).

use std::time::{Duration, Instant};

use uuid::Uuid;
use warden_rules::throughput::CapacitySource;
use warden_test_support::wait;

use crate::common::{Harness, TestSender, unique_phone};

const WAIT: Duration = Duration::from_secs(60);

/// The ids of `n` queued texts from sender `id`, each to its own customer, published.
async fn queue_from(h: &Harness, id: &str, n: usize) -> Vec<Uuid> {
    let keys = h.keys_of(id);
    let mut ids = Vec::with_capacity(n);
    for _ in 0..n {
        let to = unique_phone();
        let message = h.insert_text_as(&to, &keys).await;
        h.publish(message, &to).await;
        ids.push(message);
    }
    ids
}

async fn sent_among(h: &Harness, ids: &[Uuid]) -> usize {
    let list = ids
        .iter()
        .map(|id| format!("'{id}'"))
        .collect::<Vec<_>>()
        .join(",");
    h.count_where(&format!("status = 'sent' AND id IN ({list})"))
        .await as usize
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_senders_messages_reach_its_own_number_with_its_own_token_and_bucket() {
    let senders = TestSender::three();
    let h = Harness::with_senders(50, &senders).await;
    let from = [
        ("a1", queue_from(&h, "a1", 3).await),
        ("a2", queue_from(&h, "a2", 3).await),
        ("b1", queue_from(&h, "b1", 3).await),
    ];
    let (d, stop) = h.dispatcher(h.config()).await;
    for (sender, ids) in &from {
        let number = senders
            .iter()
            .find(|s| s.id == *sender)
            .unwrap()
            .phone_number_id;
        for id in ids {
            // Sent at all proves the token: the sim refuses any other number's with 401.
            let row = h.wait_status(*id, &["sent"], WAIT).await;
            assert!(row.wamid.is_some(), "{sender}: {row:?}");
            let stats = h.sim.stats();
            let at = &stats.by_message[&id.to_string()];
            assert_eq!(at.phone_number_id, number, "{sender}'s message {id}");
            assert_eq!(at.count, 1, "{sender}'s message {id} sent once");
        }
    }
    assert_eq!(h.sim.stats().total_sends, 9);
    // Each took its tokens from its own sender's bucket; the default's keeps the
    // channel's key, as with one number.
    let redis = h.deps.redis.clone().unwrap();
    for (sender, key) in [(None, "default"), (Some("a2"), "a2"), (Some("b1"), "b1")] {
        let state = warden_ratelimit::state_for(&redis, &h.bucket_channel, sender, 50)
            .await
            .unwrap();
        assert!(state.tokens_used >= 3, "{key}'s bucket: {state:?}");
        assert_eq!(
            d.bucket_of(key).key(),
            warden_ratelimit::sender_bucket_key(&h.bucket_channel, sender)
        );
    }
    assert_eq!(
        d.bucket().key(),
        warden_ratelimit::bucket_key(&h.bucket_channel)
    );
    stop.send(()).unwrap();
    d.join().await.unwrap();
    h.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_bucket_starts_at_its_senders_mps_and_follows_its_own_number() {
    let [mut a1, mut a2, b1] = TestSender::three();
    a1.mps = Some(40);
    a2.mps = Some(7);
    let h = Harness::with_senders(30, &[a1, a2, b1.clone()]).await;
    // The platform says b1's number is in coexistence with the WhatsApp Business app (20
    // mps); it says nothing about the others beyond the default level.
    let number = h.sim.state.numbers.get(b1.phone_number_id).unwrap();
    h.sim
        .state
        .set_throughput_of(number, None, Some(true), None);
    let (d, stop) = h.dispatcher(h.config()).await;
    // b1's number was read with b1's own client at start.
    wait::until(WAIT, "b1's bucket capped at 20 mps", || async {
        d.bucket_of("b1").mps() == 20
    })
    .await;
    let b1_now = warden_core::account::throughput::current_for(&h.deps.pg, "b1", 30)
        .await
        .unwrap();
    assert_eq!(
        (b1_now.mps, b1_now.source),
        (20, CapacitySource::Coexistence)
    );
    // The others keep their starting rates: the default sender's and a2's `mps`.
    assert_eq!(d.bucket().mps(), 40);
    assert_eq!(d.bucket_of("default").mps(), 40);
    assert_eq!(d.bucket_of("a2").mps(), 7);
    let default_now = warden_core::account::throughput::current(&h.deps.pg, 40)
        .await
        .unwrap();
    assert_eq!(
        (default_now.mps, default_now.source),
        (40, CapacitySource::Setting)
    );
    // A change recorded for a2's number later reaches the running a2 bucket only.
    let mut c = h.deps.pg.get().await.unwrap();
    warden_core::account::throughput::apply_sender_quality_event(
        &mut c,
        "a2",
        "THROUGHPUT_UPGRADE",
        None,
    )
    .await
    .unwrap();
    drop(c);
    wait::until(WAIT, "a2's bucket at 1,000 mps", || async {
        d.bucket_of("a2").mps() == 1000
    })
    .await;
    assert_eq!(d.bucket().mps(), 40);
    assert_eq!(d.bucket_of("b1").mps(), 20);
    stop.send(()).unwrap();
    d.join().await.unwrap();
    h.cleanup().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_numbers_backlog_does_not_hold_another_numbers_messages() {
    let [mut a1, mut a2, mut b1] = TestSender::three();
    a1.mps = Some(100);
    a2.mps = Some(1);
    b1.mps = Some(100);
    let h = Harness::with_senders(100, &[a1, a2, b1]).await;
    // a2's backlog is first on the stream: at 1 mps it needs about a minute, and it is
    // more than every slot in flight; b1's messages come behind it.
    let slow = queue_from(&h, "a2", 60).await;
    let fast = queue_from(&h, "b1", 10).await;
    let mut cfg = h.config();
    cfg.dispatch.concurrency = 8;
    let started = Instant::now();
    let (d, stop) = h.dispatcher(cfg).await;
    // Were a2's waiters holding the 8 slots, b1 would wait behind about 50 of a2's
    // messages at 1 a second.
    wait::until(Duration::from_secs(40), "every b1 message sent", || async {
        sent_among(&h, &fast).await == fast.len()
    })
    .await;
    let took = started.elapsed();
    let slow_sent = sent_among(&h, &slow).await;
    eprintln!(
        "b1's 10 sent after {:.1} s beside a2's backlog (a2 sent {slow_sent} of 60 at 1 mps)",
        took.as_secs_f64()
    );
    // a2 keeps its own pace meanwhile: its bucket's burst (1) plus one a second.
    assert!(
        slow_sent as f64 <= 2.0 + took.as_secs_f64(),
        "a2 sent {slow_sent} in {took:?}"
    );
    // And its messages put back come again: a2 goes on sending.
    wait::until(WAIT, "a2 to go on sending", || async {
        sent_among(&h, &slow).await >= slow_sent + 3
    })
    .await;
    assert!(
        d.stats().held > 0,
        "a2's backlog was put back, not held in flight"
    );
    assert_eq!(h.sim.stats().duplicates, 0);
    stop.send(()).unwrap();
    d.join().await.unwrap();
    h.cleanup().await;
}
