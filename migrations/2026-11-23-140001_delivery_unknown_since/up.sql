-- When a send's outcome became unknown (its call timed out, or the dispatcher holding its
-- claim died): set while the row waits `sending` for its status webhook or the resend rule,
-- cleared when it is resent; a row that moved on with it still set was settled by its
-- webhook (counted once, then cleared). The dispatchers' sweep reads both through this index.
ALTER TABLE messages ADD COLUMN IF NOT EXISTS unknown_since TIMESTAMPTZ;
CREATE INDEX IF NOT EXISTS messages_unknown_since_idx ON messages (unknown_since)
    WHERE unknown_since IS NOT NULL;

-- When status webhooks last moved `status_through` forward. An unknown outcome is resent on
-- DISPATCH_UNKNOWN_MAX_WAIT only while webhooks are quiet: a backlog still draining (progress
-- advancing, not yet past the claim) may yet bring its own status. Kept by a trigger, so the
-- webhook server's one upsert stays as it is.
ALTER TABLE webhook_progress ADD COLUMN IF NOT EXISTS advanced_at TIMESTAMPTZ NOT NULL DEFAULT now();
CREATE OR REPLACE FUNCTION webhook_progress_advanced() RETURNS trigger AS $$
BEGIN
    IF NEW.status_through > OLD.status_through THEN
        NEW.advanced_at := now();
    END IF;
    RETURN NEW;
END
$$ LANGUAGE plpgsql;
DROP TRIGGER IF EXISTS webhook_progress_advanced ON webhook_progress;
CREATE TRIGGER webhook_progress_advanced BEFORE UPDATE ON webhook_progress
    FOR EACH ROW EXECUTE FUNCTION webhook_progress_advanced();
