-- Privacy: message content is redacted after MESSAGE_CONTENT_RETENTION or when
-- a customer is forgotten; the row (type, status, timestamps) stays.
ALTER TABLE messages ADD COLUMN IF NOT EXISTS redacted_at timestamptz;
-- The retention job's scan: the oldest content not yet redacted.
CREATE INDEX IF NOT EXISTS messages_unredacted_idx
    ON messages (created_at) WHERE redacted_at IS NULL;
-- Numbers that must never be messaged again (`warden-admin customers forget`).
CREATE TABLE IF NOT EXISTS suppressions (
    phone      text PRIMARY KEY,
    reason     text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);
