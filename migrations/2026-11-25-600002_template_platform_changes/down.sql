ALTER TABLE templates DROP COLUMN IF EXISTS quality_updated_at;
ALTER TABLE templates DROP COLUMN IF EXISTS quality_score;
ALTER TABLE templates DROP COLUMN IF EXISTS pending_category_at;
ALTER TABLE templates DROP COLUMN IF EXISTS pending_category;
