-- The rule that paused a campaign (`messaging_limit`), NULL when a person or an agent paused
-- it. Messages a campaign had already accepted before a rule paused it still go out: they
-- were admitted within the limit. A pause by hand holds them.
ALTER TABLE campaigns ADD COLUMN IF NOT EXISTS paused_by_rule TEXT;
