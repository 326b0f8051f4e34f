-- Each sender's number has its own throughput (docs/configuration.md, "Several numbers"):
-- one row per (channel, sender). The default sender's row keeps the key 'default', so the
-- row written before senders existed stays its own.
ALTER TABLE number_throughput ADD COLUMN IF NOT EXISTS sender TEXT NOT NULL DEFAULT 'default';
ALTER TABLE number_throughput DROP CONSTRAINT IF EXISTS number_throughput_pkey;
ALTER TABLE number_throughput ADD PRIMARY KEY (channel, sender);
