DROP TRIGGER IF EXISTS messages_campaign_counters_update ON messages;
DROP TRIGGER IF EXISTS messages_campaign_counters_insert ON messages;
DROP FUNCTION IF EXISTS warden_campaign_counters_on_update();
DROP FUNCTION IF EXISTS warden_campaign_counters_on_insert();
DROP FUNCTION IF EXISTS warden_campaign_bucket(TEXT, TEXT);
ALTER TABLE campaigns DROP COLUMN IF EXISTS cancelled_count;
