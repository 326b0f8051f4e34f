DROP TRIGGER IF EXISTS messages_campaign_counters_insert ON messages;
DROP TRIGGER IF EXISTS messages_campaign_counters ON messages;
CREATE CONSTRAINT TRIGGER messages_campaign_counters
    AFTER INSERT OR UPDATE OF status, error_category ON messages
    DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW EXECUTE FUNCTION warden_campaign_counters_move();
