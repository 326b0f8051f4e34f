-- Campaign counters: each recipient is counted once, in the latest
-- state of its message. Every writer of `messages` (send path, dispatcher, webhook,
-- scheduler) moves a recipient between buckets through the trigger below, in the same
-- transaction as the status change, so committed counters always equal what the rows
-- say. Buckets: sent (sent), delivered (delivered, read; also in sent_count), failed,
-- cancelled (failed with error category `campaign`: the campaign was cancelled before it
-- went out), pending (anything else: no counter). Never-queued recipients of a cancelled
-- campaign are added to cancelled_count by the scheduler.
ALTER TABLE campaigns ADD COLUMN IF NOT EXISTS cancelled_count INTEGER NOT NULL DEFAULT 0;

CREATE OR REPLACE FUNCTION warden_campaign_bucket(status TEXT, error_category TEXT)
RETURNS TEXT LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE
        WHEN status = 'sent' THEN 'sent'
        WHEN status IN ('delivered', 'read') THEN 'delivered'
        WHEN status = 'failed' AND error_category IS NOT DISTINCT FROM 'campaign' THEN 'cancelled'
        WHEN status = 'failed' THEN 'failed'
        ELSE 'pending'
    END
$$;

-- The move of one row, applied when its transaction commits (a deferred constraint
-- trigger): a transaction locks its message rows first and the campaign row last, only
-- at commit, so counter updates never hold a campaign row while waiting for a message
-- row, and pause/resume/cancel (which lock only the campaign row) wait at most for a
-- commit in progress. A row changed twice in one transaction moves twice; the sum is the
-- move from its first state to its last.
CREATE OR REPLACE FUNCTION warden_campaign_counters_move() RETURNS TRIGGER
LANGUAGE plpgsql AS $$
DECLARE
    old_b TEXT := 'pending';
    new_b TEXT;
BEGIN
    IF NEW.campaign_id IS NULL THEN
        RETURN NULL;
    END IF;
    IF TG_OP = 'UPDATE' THEN
        old_b := warden_campaign_bucket(OLD.status, OLD.error_category);
    END IF;
    new_b := warden_campaign_bucket(NEW.status, NEW.error_category);
    IF old_b = new_b THEN
        RETURN NULL;
    END IF;
    UPDATE campaigns c
       SET sent_count = c.sent_count + (new_b IN ('sent', 'delivered'))::int - (old_b IN ('sent', 'delivered'))::int,
           delivered_count = c.delivered_count + (new_b = 'delivered')::int - (old_b = 'delivered')::int,
           failed_count = c.failed_count + (new_b = 'failed')::int - (old_b = 'failed')::int,
           cancelled_count = c.cancelled_count + (new_b = 'cancelled')::int - (old_b = 'cancelled')::int,
           updated_at = now()
     WHERE c.id = NEW.campaign_id;
    RETURN NULL;
END
$$;

DROP TRIGGER IF EXISTS messages_campaign_counters ON messages;
CREATE CONSTRAINT TRIGGER messages_campaign_counters
    AFTER INSERT OR UPDATE OF status, error_category ON messages
    DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW EXECUTE FUNCTION warden_campaign_counters_move();

-- Existing campaigns: counters recomputed from the rows once (they may have counted a
-- recipient twice).
UPDATE campaigns c
   SET sent_count = x.sent, delivered_count = x.delivered, failed_count = x.failed,
       cancelled_count = x.cancelled
  FROM (SELECT campaign_id,
               count(*) FILTER (WHERE b IN ('sent', 'delivered'))::int AS sent,
               count(*) FILTER (WHERE b = 'delivered')::int AS delivered,
               count(*) FILTER (WHERE b = 'failed')::int AS failed,
               count(*) FILTER (WHERE b = 'cancelled')::int AS cancelled
        FROM (SELECT campaign_id, warden_campaign_bucket(status, error_category) AS b
              FROM messages WHERE campaign_id IS NOT NULL) m
        GROUP BY campaign_id) x
 WHERE c.id = x.campaign_id;
