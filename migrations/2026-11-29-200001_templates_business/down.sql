DELETE FROM templates WHERE business <> 'default';
ALTER TABLE templates DROP CONSTRAINT IF EXISTS templates_business_name_locale_key;
ALTER TABLE templates ADD CONSTRAINT templates_name_locale_key UNIQUE (name, locale);
ALTER TABLE templates DROP COLUMN IF EXISTS business;
