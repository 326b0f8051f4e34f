-- A template's components as created (platform shape: HEADER, BODY, FOOTER, BUTTONS) and
-- how its placeholders are written. NULL: body only, positional (templates stored before).
ALTER TABLE templates ADD COLUMN IF NOT EXISTS components JSONB;
ALTER TABLE templates ADD COLUMN IF NOT EXISTS parameter_format TEXT;
-- A campaign's template header/button parameters (platform shape); NULL: none.
ALTER TABLE campaigns ADD COLUMN IF NOT EXISTS components JSONB;
