-- "User changed number": the new number continues the old one's history and
-- inherits its opt-outs. One row per change, from the platform's system message.
CREATE TABLE IF NOT EXISTS customer_number_changes (
    old_phone   TEXT        NOT NULL,
    new_phone   TEXT        NOT NULL,
    changed_at  TIMESTAMPTZ NOT NULL,
    recorded_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (old_phone, new_phone)
);
CREATE INDEX IF NOT EXISTS customer_number_changes_new_idx ON customer_number_changes (new_phone);
