DROP TRIGGER IF EXISTS messages_campaign_counters ON messages;
DROP FUNCTION IF EXISTS warden_campaign_counters_move();
DROP FUNCTION IF EXISTS warden_campaign_bucket(TEXT, TEXT);
ALTER TABLE campaigns DROP COLUMN IF EXISTS cancelled_count;
