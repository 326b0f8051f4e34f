-- What the platform says of each sender's number (a read of the number, or the display
-- number every webhook carries), one row per sender by its stored key. Kept apart from
-- number_throughput: a row there means "the platform set this number's rate", which a
-- plain read of a standard number must not claim.
CREATE TABLE IF NOT EXISTS sender_numbers (
    sender_id            TEXT PRIMARY KEY,
    display_phone_number TEXT,
    -- The display number's digits: the platform writes it "+1 555-010-0000" in reads and
    -- "15550100000" in webhooks; a quality update is matched on these.
    display_digits       TEXT,
    quality_rating       TEXT,
    throughput_level     TEXT,
    name_status          TEXT,
    messaging_limit_tier TEXT,
    -- When the platform was last asked (null: only webhooks said something).
    read_at              TIMESTAMPTZ,
    updated_at           TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS sender_numbers_display_idx ON sender_numbers (display_digits);

INSERT INTO sender_numbers (sender_id, display_phone_number, display_digits)
SELECT sender, display_phone_number, regexp_replace(display_phone_number, '[^0-9]', '', 'g')
  FROM number_throughput
 WHERE display_phone_number IS NOT NULL
ON CONFLICT (sender_id) DO NOTHING;

-- A phone_number_quality_update whose number Warden could not tell (a business with
-- several senders, the display number not known yet): kept, in arrival order, until a
-- read of the business's numbers from the platform says whose it is. Never applied to a
-- guess, never dropped while it may be ours.
CREATE TABLE IF NOT EXISTS quality_updates_unmatched (
    id                   BIGSERIAL PRIMARY KEY,
    account              TEXT NOT NULL,
    display_phone_number TEXT NOT NULL,
    event                TEXT NOT NULL,
    received_at          TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS quality_updates_unmatched_account_idx ON quality_updates_unmatched (account, id);
