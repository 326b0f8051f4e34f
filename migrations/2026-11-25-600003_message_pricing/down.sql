DROP TABLE IF EXISTS message_pricing;
