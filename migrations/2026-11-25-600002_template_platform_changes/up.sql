-- A category the platform will give a template at a set time (`template_category_update`
-- with `correct_category` and `category_update_timestamp`): from `pending_category_at` on,
-- the template is read as `pending_category` (the send path and the dispatcher's recheck).
ALTER TABLE templates ADD COLUMN IF NOT EXISTS pending_category TEXT;
ALTER TABLE templates ADD COLUMN IF NOT EXISTS pending_category_at TIMESTAMPTZ;
-- The platform's quality score of the template (`message_template_quality_update`).
ALTER TABLE templates ADD COLUMN IF NOT EXISTS quality_score TEXT;
ALTER TABLE templates ADD COLUMN IF NOT EXISTS quality_updated_at TIMESTAMPTZ;
