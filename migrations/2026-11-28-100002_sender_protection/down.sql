DROP TABLE IF EXISTS sender_protection;
