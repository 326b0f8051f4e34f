//! A read use case never holds two pooled connections at once: with a pool of one
//! connection and no Redis (every window read falls back to Postgres), each still answers,
//! and 16 concurrent calls all answer. Holding one connection while waiting for a second
//! starved the pool under concurrency (32 HTTP clients timed out).

use chrono::Utc;
use warden_rules::kinds::MessageType;
use warden_rules::phone::canonicalize;

use crate::common::TestCore;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_use_cases_answer_with_a_pool_of_one_connection() {
    let h = TestCore::builder().pool_size(1).build().await;
    let core = &h.core;
    let calls = (0..16).map(|i| {
        let core = core.clone();
        async move {
            let phone = canonicalize(&format!("+1555020{i:04}")).unwrap();
            let now = Utc::now();
            core.check(
                &phone,
                None,
                MessageType::Marketing.described_content(),
                now,
            )
            .await
            .expect("check answers");
            core.frequency(&phone, None, now)
                .await
                .expect("frequency answers");
            core.conversation(&phone, "whatsapp", "default")
                .await
                .expect("conversation answers");
        }
    });
    futures::future::join_all(calls).await;
}
