-- When a send's outcome became unknown (its call timed out, or the dispatcher holding its
-- claim died): set while the row waits `sending` for its status webhook or the resend rule,
-- cleared when it is resent; a row that moved on with it still set was settled by its
-- webhook (counted once, then cleared). The dispatchers' sweep reads both through this index.
ALTER TABLE messages ADD COLUMN IF NOT EXISTS unknown_since TIMESTAMPTZ;
CREATE INDEX IF NOT EXISTS messages_unknown_since_idx ON messages (unknown_since)
    WHERE unknown_since IS NOT NULL;
