-- Templates belong to a business (its WhatsApp Business Account): two businesses may each
-- have an `order_update` in `en_US` with its own status and category. The default sender's
-- business keeps the key 'default', so every template stored before is its own.
ALTER TABLE templates ADD COLUMN IF NOT EXISTS business TEXT NOT NULL DEFAULT 'default';
ALTER TABLE templates DROP CONSTRAINT IF EXISTS templates_name_locale_key;
ALTER TABLE templates ADD CONSTRAINT templates_business_name_locale_key UNIQUE (business, name, locale);
