-- Several numbers and businesses (docs/configuration.md, "Several numbers").
--
-- Rows are keyed by the sender, its business (WhatsApp Business Account) and its business
-- portfolio. The default sender, its business and its portfolio are stored under the key
-- 'default', so every row written before a senders file existed belongs to them and a
-- deployment with one number writes nothing more than before.

-- The care window and the conversation: per (sender, customer).
ALTER TABLE conversations ADD COLUMN IF NOT EXISTS sender_id TEXT NOT NULL DEFAULT 'default';
ALTER TABLE conversations DROP CONSTRAINT IF EXISTS conversations_customer_phone_channel_key;
CREATE UNIQUE INDEX IF NOT EXISTS conversations_sender_customer_channel_key
    ON conversations (customer_phone, channel, sender_id);

-- The number a message went out from or came in to, and its business; no row: the
-- default sender (messages has no room for another column).
CREATE TABLE IF NOT EXISTS message_senders (
    message_id UUID PRIMARY KEY REFERENCES messages (id) ON DELETE CASCADE,
    sender_id  TEXT NOT NULL,
    business   TEXT NOT NULL
);

-- Frequency caps count per business.
ALTER TABLE message_frequencies ADD COLUMN IF NOT EXISTS business TEXT NOT NULL DEFAULT 'default';

-- Consent per business: the default business's is the customer row's (opt_in_marketing,
-- opt_in_utility); another business's lives here, and no row means opted in, as for a
-- customer seen for the first time.
CREATE TABLE IF NOT EXISTS business_consent (
    business          TEXT NOT NULL,
    customer_phone    TEXT NOT NULL,
    opt_in_marketing  BOOLEAN NOT NULL DEFAULT true,
    opt_in_utility    BOOLEAN NOT NULL DEFAULT true,
    opt_changed_at    TIMESTAMPTZ,
    opt_change_reason TEXT,
    PRIMARY KEY (business, customer_phone)
);

-- The messaging limit and who it reached: per business portfolio.
ALTER TABLE portfolio_limit ADD COLUMN IF NOT EXISTS portfolio TEXT NOT NULL DEFAULT 'default';
ALTER TABLE portfolio_limit DROP CONSTRAINT IF EXISTS portfolio_limit_pkey;
ALTER TABLE portfolio_limit DROP COLUMN IF EXISTS id;
ALTER TABLE portfolio_limit ADD PRIMARY KEY (portfolio);

ALTER TABLE portfolio_reach ADD COLUMN IF NOT EXISTS portfolio TEXT NOT NULL DEFAULT 'default';
ALTER TABLE portfolio_reach DROP CONSTRAINT IF EXISTS portfolio_reach_pkey;
ALTER TABLE portfolio_reach ADD PRIMARY KEY (portfolio, customer_phone);
DROP INDEX IF EXISTS portfolio_reach_at_idx;
CREATE INDEX IF NOT EXISTS portfolio_reach_at_idx ON portfolio_reach (portfolio, reached_at);

-- Campaigns: the number they send from, or the numbers of one business they spread over.
ALTER TABLE campaigns ADD COLUMN IF NOT EXISTS sender_id TEXT NOT NULL DEFAULT 'default';
ALTER TABLE campaigns ADD COLUMN IF NOT EXISTS senders TEXT[];

-- Agents may be limited to some senders (NULL: all).
ALTER TABLE agents ADD COLUMN IF NOT EXISTS senders TEXT[];
