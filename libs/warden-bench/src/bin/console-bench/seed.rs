//! The bench's data, written set-based with generate_series (a bench executable; the
//! product writes through warden-core): customers (a tenth opted out, tags, BSUIDs, names),
//! messages over the last days across directions, statuses, categories and error codes,
//! campaigns and their messages, templates, agents, conversations with holders, and the
//! audit rows the console reads (consent changes, refusals, refusals at dispatch, others).
//! Everything is derived from the row number, so two runs hold the same data. Messages and
//! audit rows are spread evenly over the last 10 days (864,000 s); the 40 campaigns' ids are
//! `md5('campaign' || k)::uuid`.

use diesel::sql_types::{BigInt, Integer, Text};
use diesel::{QueryableByName, sql_query};
use diesel_async::{AsyncPgConnection, RunQueryDsl};

/// The customer key of customer number `n` (1-based).
pub fn phone(n: i64) -> String {
    format!("62811{n:08}")
}

#[derive(QueryableByName)]
struct IndexDef {
    #[diesel(sql_type = Text)]
    name: String,
    #[diesel(sql_type = Text)]
    def: String,
}

/// The campaign counters' triggers (on update, on insert).
const COUNTER_TRIGGERS: [&str; 2] = [
    "messages_campaign_counters",
    "messages_campaign_counters_insert",
];

/// The campaigns' counters from their messages, as the trigger keeps them (the buckets of
/// `warden_campaign_bucket`).
const COUNTERS: &str = "UPDATE campaigns c
   SET total_recipients = x.n, enqueued_count = x.n, sent_count = x.sent,
       delivered_count = x.delivered, failed_count = x.failed, cancelled_count = x.cancelled
  FROM (SELECT campaign_id, count(*)::int AS n,
               count(*) FILTER (WHERE b IN ('sent', 'delivered'))::int AS sent,
               count(*) FILTER (WHERE b = 'delivered')::int AS delivered,
               count(*) FILTER (WHERE b = 'failed')::int AS failed,
               count(*) FILTER (WHERE b = 'cancelled')::int AS cancelled
          FROM (SELECT campaign_id, warden_campaign_bucket(status, error_category) AS b
                  FROM messages WHERE campaign_id IS NOT NULL) m
         GROUP BY campaign_id) x
 WHERE c.id = x.campaign_id";

/// A statement and what it seeds, for the progress lines.
struct Step {
    what: &'static str,
    sql: &'static str,
}

const STEPS: &[Step] = &[
    Step {
        what: "customers",
        sql: "INSERT INTO customers (phone, country, opt_in_marketing, opt_in_utility, opt_changed_at,
                 opt_change_reason, tags, last_interaction_at, bsuid, username, created_at, updated_at)
              SELECT '62811' || lpad(g::text, 8, '0'), 'ID', g % 10 <> 0, g % 50 <> 0,
                     CASE WHEN g % 10 = 0 THEN now() - make_interval(hours => (g % 240)::int) END,
                     CASE WHEN g % 10 = 0 THEN 'keyword STOP' END,
                     (ARRAY['vip','newsletter','jakarta','bandung','wholesale','new'])[1 + g % 6 : 1 + g % 6 + g % 2],
                     now() - make_interval(mins => (g % 14400)::int),
                     CASE WHEN g % 4 = 0 THEN 'ID.' || md5(g::text) END,
                     CASE WHEN g % 2 = 0 THEN
                       (ARRAY['Budi','Siti','Agus','Dewi','Rina','Andi','Putri','Joko'])[1 + g % 8] || ' ' ||
                       (ARRAY['Santoso','Wijaya','Pratama','Lestari','Hidayat'])[1 + g % 5] || ' ' || g END,
                     now() - make_interval(days => (g % 365)::int), now() - make_interval(mins => (g % 100000)::int)
                FROM generate_series(1, $1) g",
    },
    Step {
        what: "templates",
        sql: "INSERT INTO templates (name, locale, category, status, body_text, rejection_reason,
                                     quality_score, created_at, updated_at)
              SELECT 'tpl_' || g, (ARRAY['id','en'])[1 + g % 2],
                     (ARRAY['marketing','utility','authentication'])[1 + g % 3],
                     (ARRAY['APPROVED','APPROVED','APPROVED','PENDING','REJECTED'])[1 + g % 5],
                     'Hello {{1}}, update number ' || g,
                     CASE WHEN g % 5 = 4 THEN 'INVALID_FORMAT' END,
                     (ARRAY['GREEN','YELLOW','RED','UNKNOWN'])[1 + g % 4],
                     now() - make_interval(days => g), now() - make_interval(hours => g)
                FROM generate_series(1, 200) g WHERE $1 > 0",
    },
    Step {
        what: "agents",
        sql: "INSERT INTO agents (name, key_id, key_salt, key_hash, scopes, status, max_sends_per_minute,
                                  max_marketing_per_day)
              SELECT 'bot-' || g, 'key' || md5(g::text), decode(md5('s' || g), 'hex'), decode(md5('h' || g), 'hex'),
                     ARRAY['messages:send','conversations:read','campaigns:write'],
                     (ARRAY['active','active','active','suspended','revoked'])[1 + g % 5],
                     CASE WHEN g % 2 = 0 THEN 60 END, CASE WHEN g % 3 = 0 THEN 1000 END
                FROM generate_series(1, 20) g WHERE $1 > 0",
    },
    Step {
        what: "campaigns",
        sql: "INSERT INTO campaigns (id, name, campaign_type, status, deliver_at, template_name, locale,
                                     variables, audience_filter, sent_count, delivered_count, failed_count,
                                     total_recipients, enqueued_count, audience_done, status_reason, created_at)
              SELECT md5('campaign' || k)::uuid, 'Campaign ' || k, 'marketing',
                     (ARRAY['completed','completed','running','paused','scheduled','pending_approval','cancelled','rejected'])[1 + k % 8],
                     now() - make_interval(hours => (k * 6)::int), 'tpl_' || (1 + k % 200), 'id', '[]', '{\"tags\":[\"vip\"]}',
                     2000, 1500, 200, 2500, 2500, true,
                     CASE WHEN k % 8 = 7 THEN 'not this week' END, now() - make_interval(hours => (k * 6)::int)
                FROM generate_series(0, 39) k WHERE $1 > 0",
    },
    Step {
        what: "messages",
        sql: "INSERT INTO messages (id, customer_phone, channel, direction, message_type, category, status,
                                    content, template_name, template_locale, campaign_id, error_code,
                                    error_category, wamid, created_at, updated_at, sent_at, failed_at)
              SELECT (lpad(to_hex((extract(epoch FROM at) * 1000)::bigint), 12, '0') || '7' || substr(md5(g::text), 1, 19))::uuid,
                     '62811' || lpad(c::text, 8, '0'), 'whatsapp',
                     CASE WHEN inbound THEN 'inbound' ELSE 'outbound' END,
                     CASE WHEN NOT inbound AND g % 7 < 3 THEN 'template' ELSE 'text' END,
                     CASE WHEN inbound THEN 'service' WHEN g % 7 = 0 THEN 'marketing'
                          WHEN g % 7 < 3 THEN 'utility' ELSE 'service' END,
                     CASE WHEN inbound THEN 'received' ELSE st END,
                     jsonb_build_object('type', 'text', 'text', jsonb_build_object('body', 'message number ' || g)),
                     CASE WHEN NOT inbound AND g % 7 < 3 THEN 'tpl_' || (1 + g % 200) END,
                     CASE WHEN NOT inbound AND g % 7 < 3 THEN 'id' END,
                     CASE WHEN NOT inbound AND g % 7 = 0 THEN md5('campaign' || (g % 40))::uuid END,
                     CASE WHEN st = 'failed' AND g % 3 <> 0 THEN (ARRAY[131049, 131026, 131047, 130472])[1 + g % 4] END,
                     CASE WHEN st = 'failed' THEN CASE WHEN g % 3 = 0 THEN 'compliance' ELSE 'platform' END END,
                     CASE WHEN NOT inbound AND st NOT IN ('queued', 'failed') THEN 'wamid.B' || g END,
                     at, at, CASE WHEN st IN ('sent', 'delivered', 'read') THEN at END,
                     CASE WHEN st = 'failed' THEN at END
                FROM (SELECT g, 1 + (g * 7919) % $2 AS c,
                             (1 + (g * 7919) % $2) % 5 = 0 AND g % 2 = 0 AS inbound,
                             (ARRAY['delivered','delivered','read','read','sent','failed','delivered','queued','read','delivered'])[1 + g % 10] AS st,
                             now() - make_interval(secs => ($1 - g) * 864000.0 / $1) AS at
                        FROM generate_series(1, $1) g) s",
    },
    Step {
        what: "conversations (with holders)",
        sql: "INSERT INTO conversations (customer_phone, channel, last_inbound_at, window_expires_at,
                                         holder, holder_since, holder_by)
              SELECT customer_phone, 'whatsapp', last, last + interval '24 hours',
                     CASE WHEN n % 10 = 0 THEN 'human' WHEN n % 10 = 1 THEN 'agents' END,
                     CASE WHEN n % 10 IN (0, 1) THEN last END,
                     CASE WHEN n % 10 = 0 THEN 'operator:ana' WHEN n % 10 = 1 THEN 'bot-1' END
                FROM (SELECT customer_phone, max(created_at) AS last, row_number() OVER () AS n
                        FROM messages WHERE direction = 'inbound' AND $1 > 0 GROUP BY 1) m",
    },
    Step {
        what: "audit: consent changes",
        sql: "INSERT INTO audit_logs (occurred_at, actor, action, entity_type, entity_id, details)
              SELECT at, actor, action, 'customer', '62811' || lpad(g::text, 8, '0'), details FROM (
                SELECT g, now() - make_interval(hours => (g % 240)::int) AS at, 'webhook' AS actor,
                       'customer_opted_out' AS action,
                       jsonb_build_object('source', 'keyword STOP', 'scope', 'marketing', 'business', 'default') AS details
                  FROM generate_series(10, $1, 10) g
                UNION ALL
                SELECT g, now() - make_interval(hours => (g % 240)::int + 240), 'import', 'customer_opted_in',
                       jsonb_build_object('source', 'import', 'scope', 'marketing', 'business', 'default')
                  FROM generate_series(5, $1, 5) g) x
              ORDER BY at",
    },
    Step {
        what: "audit: refusals and other actions",
        sql: "INSERT INTO audit_logs (occurred_at, actor, action, entity_type, entity_id, details)
              SELECT now() - make_interval(secs => ($1 - g) * 864000.0 / $1), 'bot-' || (1 + g % 20),
                     (ARRAY['send_refused','send_refused','send_refused','message_held','message_scheduled',
                            'customer_undeliverable','customer_marketing_limited','message_retried'])[1 + g % 8],
                     'customer', '62811' || lpad((1 + (g * 104729) % $2)::text, 8, '0'),
                     jsonb_build_object('reason_code',
                       (ARRAY['TEMPLATE_REQUIRED','USER_OPTED_OUT','FREQUENCY_CAP','POLICY_VIOLATION','QUIET_HOURS'])[1 + g % 5],
                       'policy_id', CASE WHEN g % 5 = 3 THEN 'no-marketing-at-night' END,
                       'message_type', 'marketing')
                FROM generate_series(1, $1) g",
    },
    Step {
        what: "audit: refusals at dispatch",
        sql: "INSERT INTO audit_logs (occurred_at, actor, action, entity_type, entity_id, details)
              SELECT created_at, 'dispatcher', 'message_refused_at_dispatch', 'message', id::text,
                     jsonb_build_object('reason_code', (ARRAY['USER_OPTED_OUT','FREQUENCY_CAP'])[1 + (extract(epoch FROM created_at)::bigint % 2)])
                FROM messages WHERE status = 'failed' AND error_category = 'compliance' AND $1 > 0
               ORDER BY created_at",
    },
];

/// Seed `customers` customers, `messages` messages and `audit` refusals and other audit rows.
pub async fn seed(
    c: &mut AsyncPgConnection,
    customers: i64,
    messages: i64,
    audit: i64,
) -> anyhow::Result<()> {
    // The messages' secondary indexes are dropped for the bulk insert and built again from
    // their own definitions after it: maintaining a dozen indexes row by row made the seed
    // three minutes long; sorted builds take seconds.
    sql_query("SET maintenance_work_mem = '256MB'")
        .execute(c)
        .await?;
    let indexes: Vec<IndexDef> = sql_query(
        "SELECT indexname AS name, indexdef AS def FROM pg_indexes
          WHERE schemaname = current_schema() AND tablename = 'messages'
            AND indexname NOT IN (SELECT conname FROM pg_constraint WHERE conrelid = 'messages'::regclass)",
    )
    .load(c)
    .await?;
    for step in STEPS {
        if step.what == "messages" {
            for i in &indexes {
                sql_query(format!("DROP INDEX {}", i.name))
                    .execute(c)
                    .await?;
            }
            // The campaign counters' trigger queues an event per row and updates a campaign
            // row for most campaign messages; the counters are computed once after instead.
            for trigger in COUNTER_TRIGGERS {
                sql_query(format!("ALTER TABLE messages DISABLE TRIGGER {trigger}"))
                    .execute(c)
                    .await?;
            }
        }
        let t = std::time::Instant::now();
        let (a, b) = match step.what {
            "customers" | "audit: consent changes" => (customers, customers),
            "messages" => (messages, customers),
            "audit: refusals and other actions" => (audit, customers),
            _ => (1, customers),
        };
        let q = sql_query(step.sql);
        let rows = if step.sql.contains("$2") {
            q.bind::<BigInt, _>(a)
                .bind::<Integer, _>(b as i32)
                .execute(c)
                .await
        } else {
            q.bind::<BigInt, _>(a).execute(c).await
        }
        .map_err(|e| anyhow::anyhow!("seeding {}: {e}", step.what))?;
        eprintln!(
            "seeded {rows:>9} {} in {:.1} s",
            step.what,
            t.elapsed().as_secs_f64()
        );
        if step.what == "messages" {
            let t = std::time::Instant::now();
            for i in &indexes {
                sql_query(&i.def).execute(c).await?;
            }
            for trigger in COUNTER_TRIGGERS {
                sql_query(format!("ALTER TABLE messages ENABLE TRIGGER {trigger}"))
                    .execute(c)
                    .await?;
            }
            sql_query(COUNTERS).execute(c).await?;
            eprintln!(
                "built {} message indexes and the campaign counters in {:.1} s",
                indexes.len(),
                t.elapsed().as_secs_f64()
            );
        }
    }
    // What autovacuum would have done by the time anyone looks: statistics and the
    // visibility map (index-only scans).
    let t = std::time::Instant::now();
    sql_query("VACUUM (ANALYZE)").execute(c).await?;
    eprintln!("vacuum analyze in {:.1} s", t.elapsed().as_secs_f64());
    Ok(())
}
