DROP TABLE IF EXISTS quality_updates_unmatched;
DROP TABLE IF EXISTS sender_numbers;
