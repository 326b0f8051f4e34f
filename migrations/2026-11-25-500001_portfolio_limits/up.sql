-- Platform limits (docs/compliance.md).
--
-- The business portfolio's messaging limit (unique users reached by business-initiated
-- messages per rolling 24 h, shared by every number). One row: Warden serves one
-- portfolio. `unique_users` NULL with a `tier` is unlimited; no `tier` means not known
-- yet (then nothing is enforced). The send path updates `checked_at` of this row before it
-- counts a new recipient, so two sends at limit - 1 never both pass.
CREATE TABLE IF NOT EXISTS portfolio_limit (
    id          BOOLEAN     PRIMARY KEY DEFAULT true CHECK (id),
    tier        TEXT,
    unique_users INTEGER    CHECK (unique_users IS NULL OR unique_users > 0),
    source      TEXT        NOT NULL DEFAULT 'unknown',
    updated_at  TIMESTAMPTZ NOT NULL DEFAULT now(),
    checked_at  TIMESTAMPTZ
);
INSERT INTO portfolio_limit (id) VALUES (true) ON CONFLICT (id) DO NOTHING;

-- The last business-initiated message each customer got (a template accepted while the
-- customer's care window was closed). A customer counts against the limit while
-- `reached_at` is inside the rolling 24 h.
CREATE TABLE IF NOT EXISTS portfolio_reach (
    customer_phone TEXT        PRIMARY KEY,
    reached_at     TIMESTAMPTZ NOT NULL,
    message_id     UUID        NOT NULL
);
CREATE INDEX IF NOT EXISTS portfolio_reach_at_idx ON portfolio_reach (reached_at);

-- Scheduled and campaign messages held back instead of refused (quiet hours with
-- `action: hold`, a customer held after 131049, the portfolio limit): the message row stays
-- `scheduled` with `deliver_at` moved to `held_until`; this says why (messages is at its
-- column limit).
CREATE TABLE IF NOT EXISTS message_holds (
    message_id  UUID        PRIMARY KEY REFERENCES messages (id) ON DELETE CASCADE,
    reason      TEXT        NOT NULL,
    held_until  TIMESTAMPTZ NOT NULL,
    holds       INTEGER     NOT NULL DEFAULT 1,
    updated_at  TIMESTAMPTZ NOT NULL DEFAULT now()
);
