DROP TRIGGER IF EXISTS webhook_progress_advanced ON webhook_progress;
DROP FUNCTION IF EXISTS webhook_progress_advanced();
ALTER TABLE webhook_progress DROP COLUMN IF EXISTS advanced_at;
DROP INDEX IF EXISTS messages_unknown_since_idx;
ALTER TABLE messages DROP COLUMN IF EXISTS unknown_since;
