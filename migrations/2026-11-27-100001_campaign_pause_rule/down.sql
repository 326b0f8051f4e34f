ALTER TABLE campaigns DROP COLUMN IF EXISTS paused_by_rule;
