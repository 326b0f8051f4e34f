DROP INDEX IF EXISTS messages_unknown_since_idx;
ALTER TABLE messages DROP COLUMN IF EXISTS unknown_since;
