-- Shared numbers (docs/compliance.md, "Shared numbers"): each conversation (one number, one
-- customer) has a holder: agents, human, other_app or idle. The row keeps what the last
-- change said (NULL: never changed; the holder then follows the customer's messages), so the
-- send path reads it with the rest of the conversation, in the same statement.
ALTER TABLE conversations ADD COLUMN IF NOT EXISTS holder TEXT;
ALTER TABLE conversations ADD COLUMN IF NOT EXISTS holder_since TIMESTAMPTZ;
ALTER TABLE conversations ADD COLUMN IF NOT EXISTS holder_by TEXT;
ALTER TABLE conversations ADD COLUMN IF NOT EXISTS holder_until TIMESTAMPTZ;

-- Every change of holder, oldest first per conversation (the audit log says it too).
CREATE TABLE IF NOT EXISTS conversation_holder_changes (
    id              BIGSERIAL PRIMARY KEY,
    customer_phone  TEXT NOT NULL,
    channel         TEXT NOT NULL,
    sender_id       TEXT NOT NULL,
    from_kind       TEXT NOT NULL,
    to_kind         TEXT NOT NULL,
    changed_by      TEXT NOT NULL,
    reason          TEXT NOT NULL,
    until           TIMESTAMPTZ,
    changed_at      TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS conversation_holder_changes_conv_idx
    ON conversation_holder_changes (customer_phone, channel, sender_id, changed_at);

-- Numbers under the platform's conversation routing: one row once a handover or standby
-- webhook arrived for it (the platform sends them only then). Thread control is called
-- only for these.
CREATE TABLE IF NOT EXISTS routed_numbers (
    sender_id  TEXT PRIMARY KEY,
    since      TIMESTAMPTZ NOT NULL DEFAULT now(),
    source     TEXT NOT NULL
);
