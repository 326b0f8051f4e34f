DROP INDEX IF EXISTS messages_amends_idx;
DROP INDEX IF EXISTS messages_history_idx;
