DROP TABLE IF EXISTS suppressions;
DROP INDEX IF EXISTS messages_unredacted_idx;
ALTER TABLE messages DROP COLUMN IF EXISTS redacted_at;
