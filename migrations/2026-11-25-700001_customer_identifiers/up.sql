-- Customers without phone numbers. The key column `customers.phone` stays the
-- customer's key: canonical phone digits when known, else the BSUID (a BSUID starts with
-- a letter, a phone key with a digit). Additive only: new nullable columns, a backfill,
-- then the unique indexes.
ALTER TABLE customers ADD COLUMN IF NOT EXISTS bsuid TEXT;
ALTER TABLE customers ADD COLUMN IF NOT EXISTS parent_bsuid TEXT;
ALTER TABLE customers ADD COLUMN IF NOT EXISTS username TEXT;

-- Backfill: a customer keyed by a BSUID (none before this migration; kept for re-runs)
-- holds it in `bsuid` as well.
UPDATE customers SET bsuid = phone
 WHERE bsuid IS NULL AND phone ~ '^[A-Za-z]{2}\.[A-Za-z0-9]+$';
UPDATE customers SET parent_bsuid = phone
 WHERE parent_bsuid IS NULL AND phone ~ '^[A-Za-z]{2}\.ENT\.[A-Za-z0-9]+$';

CREATE UNIQUE INDEX IF NOT EXISTS customers_bsuid_key ON customers (bsuid) WHERE bsuid IS NOT NULL;
CREATE UNIQUE INDEX IF NOT EXISTS customers_parent_bsuid_key
    ON customers (parent_bsuid) WHERE parent_bsuid IS NOT NULL;
-- Usernames are display only and can move between people: looked up, never unique.
CREATE INDEX IF NOT EXISTS customers_username_idx ON customers (username) WHERE username IS NOT NULL;
