-- Campaign counters (issue 22, hole 13): each recipient is counted once, in the latest
-- state of its message. Every writer of `messages` (send path, dispatcher, webhook,
-- scheduler) moves a recipient between buckets through the statement triggers below, in
-- the same transaction as the status change, so the counters always equal what the rows
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

-- Both triggers sum one statement's bucket moves per campaign (a bulk update is one
-- UPDATE of each campaign row) and lock the campaign rows in id order, so two bulk
-- statements never take them in opposite orders.
CREATE OR REPLACE FUNCTION warden_campaign_counters_on_update() RETURNS TRIGGER
LANGUAGE plpgsql AS $$
BEGIN
    WITH moves AS (
        SELECT n.campaign_id,
               warden_campaign_bucket(o.status, o.error_category) AS old_b,
               warden_campaign_bucket(n.status, n.error_category) AS new_b
        FROM warden_new_rows n JOIN warden_old_rows o ON o.id = n.id
        WHERE n.campaign_id IS NOT NULL),
    deltas AS (
        SELECT campaign_id,
               sum((new_b IN ('sent', 'delivered'))::int - (old_b IN ('sent', 'delivered'))::int) AS sent,
               sum((new_b = 'delivered')::int - (old_b = 'delivered')::int) AS delivered,
               sum((new_b = 'failed')::int - (old_b = 'failed')::int) AS failed,
               sum((new_b = 'cancelled')::int - (old_b = 'cancelled')::int) AS cancelled
        FROM moves WHERE old_b <> new_b GROUP BY campaign_id),
    locked AS (
        SELECT c.id FROM campaigns c JOIN deltas d ON d.campaign_id = c.id
        WHERE d.sent <> 0 OR d.delivered <> 0 OR d.failed <> 0 OR d.cancelled <> 0
        ORDER BY c.id FOR NO KEY UPDATE OF c)
    UPDATE campaigns c
       SET sent_count = c.sent_count + d.sent, delivered_count = c.delivered_count + d.delivered,
           failed_count = c.failed_count + d.failed, cancelled_count = c.cancelled_count + d.cancelled,
           updated_at = now()
      FROM deltas d JOIN locked l ON l.id = d.campaign_id
     WHERE c.id = d.campaign_id;
    RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION warden_campaign_counters_on_insert() RETURNS TRIGGER
LANGUAGE plpgsql AS $$
BEGIN
    WITH deltas AS (
        SELECT campaign_id,
               sum((b IN ('sent', 'delivered'))::int) AS sent,
               sum((b = 'delivered')::int) AS delivered,
               sum((b = 'failed')::int) AS failed,
               sum((b = 'cancelled')::int) AS cancelled
        FROM (SELECT campaign_id, warden_campaign_bucket(status, error_category) AS b
              FROM warden_new_rows WHERE campaign_id IS NOT NULL) x
        WHERE b <> 'pending' GROUP BY campaign_id),
    locked AS (
        SELECT c.id FROM campaigns c JOIN deltas d ON d.campaign_id = c.id
        ORDER BY c.id FOR NO KEY UPDATE OF c)
    UPDATE campaigns c
       SET sent_count = c.sent_count + d.sent, delivered_count = c.delivered_count + d.delivered,
           failed_count = c.failed_count + d.failed, cancelled_count = c.cancelled_count + d.cancelled,
           updated_at = now()
      FROM deltas d JOIN locked l ON l.id = d.campaign_id
     WHERE c.id = d.campaign_id;
    RETURN NULL;
END
$$;

DROP TRIGGER IF EXISTS messages_campaign_counters_update ON messages;
CREATE TRIGGER messages_campaign_counters_update AFTER UPDATE ON messages
    REFERENCING OLD TABLE AS warden_old_rows NEW TABLE AS warden_new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION warden_campaign_counters_on_update();
DROP TRIGGER IF EXISTS messages_campaign_counters_insert ON messages;
CREATE TRIGGER messages_campaign_counters_insert AFTER INSERT ON messages
    REFERENCING NEW TABLE AS warden_new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION warden_campaign_counters_on_insert();

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
