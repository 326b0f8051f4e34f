-- The operator console's reads (console-bench: p99 <= 200 ms with 1,000,000 messages and
-- 100,000 customers). Found with EXPLAIN ANALYZE on the bench's data.

-- The overview's funnel and hourly chart: the last 24 h of messages, read from the index
-- alone (direction and status carried), not a scan of every message.
CREATE INDEX IF NOT EXISTS messages_created_idx
    ON messages (created_at) INCLUDE (direction, status);

-- The overview's refusals (two actions since a moment) and the audit page filtered by
-- action or by actor, newest first.
CREATE INDEX IF NOT EXISTS audit_logs_action_time_idx ON audit_logs (action, occurred_at);
CREATE INDEX IF NOT EXISTS audit_logs_action_id_idx ON audit_logs (action, id);
CREATE INDEX IF NOT EXISTS audit_logs_actor_id_idx ON audit_logs (actor, id);

-- Customer search: a phone prefix (LIKE 'digits%' needs pattern ops unless the database's
-- collation is C), a name anywhere in the username (trigrams), and the recently changed
-- customers an empty search lists.
CREATE INDEX IF NOT EXISTS customers_phone_prefix_idx ON customers (phone text_pattern_ops);
CREATE EXTENSION IF NOT EXISTS pg_trgm;
CREATE INDEX IF NOT EXISTS customers_username_trgm_idx
    ON customers USING gin (username gin_trgm_ops) WHERE username IS NOT NULL;
CREATE INDEX IF NOT EXISTS customers_updated_idx ON customers (updated_at);
