DROP TABLE IF EXISTS message_handoffs;
