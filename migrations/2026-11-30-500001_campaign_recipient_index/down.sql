DROP INDEX IF EXISTS messages_campaign_customer_idx;
