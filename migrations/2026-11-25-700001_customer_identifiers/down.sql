DROP INDEX IF EXISTS customers_username_idx;
DROP INDEX IF EXISTS customers_parent_bsuid_key;
DROP INDEX IF EXISTS customers_bsuid_key;
ALTER TABLE customers DROP COLUMN IF EXISTS username;
ALTER TABLE customers DROP COLUMN IF EXISTS parent_bsuid;
ALTER TABLE customers DROP COLUMN IF EXISTS bsuid;
