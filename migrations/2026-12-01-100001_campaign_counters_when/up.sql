-- The campaign counters' trigger fires only for a row that changes bucket: a queued
-- recipient's insert (pending) and any message outside a campaign no longer queue a
-- deferred event and a function call at commit. The condition is checked when the row
-- changes (as the move itself reads OLD and NEW then), so the sum of the moves is the
-- same. INSERT and UPDATE are two triggers: an INSERT trigger's condition cannot read OLD.
DROP TRIGGER IF EXISTS messages_campaign_counters ON messages;
CREATE CONSTRAINT TRIGGER messages_campaign_counters
    AFTER UPDATE OF status, error_category ON messages
    DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW
    WHEN (NEW.campaign_id IS NOT NULL
          AND warden_campaign_bucket(OLD.status, OLD.error_category)
              IS DISTINCT FROM warden_campaign_bucket(NEW.status, NEW.error_category))
    EXECUTE FUNCTION warden_campaign_counters_move();
DROP TRIGGER IF EXISTS messages_campaign_counters_insert ON messages;
CREATE CONSTRAINT TRIGGER messages_campaign_counters_insert
    AFTER INSERT ON messages
    DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW
    WHEN (NEW.campaign_id IS NOT NULL
          AND warden_campaign_bucket(NEW.status, NEW.error_category) <> 'pending')
    EXECUTE FUNCTION warden_campaign_counters_move();
