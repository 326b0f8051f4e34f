-- Whether a customer already has a message of a campaign (a fan-out page read again): the
-- (campaign_id, status) index made the planner read every message of the campaign so far
-- for each chunk, which grew with the campaign.
CREATE INDEX IF NOT EXISTS messages_campaign_customer_idx
    ON messages (campaign_id, customer_phone) WHERE campaign_id IS NOT NULL;
