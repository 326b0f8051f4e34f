-- A customer's latest answer to a business number's call permission request, one row per
-- (sender, customer). `replied_at` is the answer's own platform time: a webhook that
-- arrives late with an older answer never overwrites a newer one.
CREATE TABLE IF NOT EXISTS call_permissions (
    sender_id      TEXT NOT NULL,
    customer_phone TEXT NOT NULL,
    response       TEXT NOT NULL CHECK (response IN ('accept', 'reject')),
    permanent      BOOLEAN NOT NULL,
    expires_at     TIMESTAMPTZ,
    -- user_action or automatic, as the platform said (NULL: it did not say).
    source         TEXT,
    replied_at     TIMESTAMPTZ NOT NULL,
    wamid          TEXT,
    updated_at     TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (sender_id, customer_phone)
);
CREATE INDEX IF NOT EXISTS call_permissions_customer_idx ON call_permissions (customer_phone);

-- Every call permission request Warden accepted for sending, counted against the daily
-- limit per (sender, customer). Keyed by the message, so a retried or rescheduled
-- message counts once.
CREATE TABLE IF NOT EXISTS call_permission_requests (
    message_id     UUID PRIMARY KEY,
    sender_id      TEXT NOT NULL,
    customer_phone TEXT NOT NULL,
    requested_at   TIMESTAMPTZ NOT NULL
);
CREATE INDEX IF NOT EXISTS call_permission_requests_pair_idx
    ON call_permission_requests (sender_id, customer_phone, requested_at);
