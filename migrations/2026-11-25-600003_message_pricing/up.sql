-- The `pricing` object of a message's status webhooks, as the platform reported it (a side
-- table: `messages` is at diesel's column limit). The latest report wins.
CREATE TABLE IF NOT EXISTS message_pricing (
    message_id UUID PRIMARY KEY REFERENCES messages (id) ON DELETE CASCADE,
    billable BOOLEAN,
    pricing_model TEXT,
    -- lower case: marketing, utility, authentication, authentication_international, service
    category TEXT,
    -- regular, free_customer_service, free_entry_point
    pricing_type TEXT,
    updated_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
