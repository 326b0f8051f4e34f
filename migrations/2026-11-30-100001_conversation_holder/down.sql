DROP TABLE IF EXISTS routed_numbers;
DROP TABLE IF EXISTS conversation_holder_changes;
ALTER TABLE conversations DROP COLUMN IF EXISTS holder_until;
ALTER TABLE conversations DROP COLUMN IF EXISTS holder_by;
ALTER TABLE conversations DROP COLUMN IF EXISTS holder_since;
ALTER TABLE conversations DROP COLUMN IF EXISTS holder;
