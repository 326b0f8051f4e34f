ALTER TABLE campaigns DROP COLUMN IF EXISTS components;
ALTER TABLE templates DROP COLUMN IF EXISTS parameter_format;
ALTER TABLE templates DROP COLUMN IF EXISTS components;
