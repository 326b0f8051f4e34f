-- Agent safety: an agent's idempotency keys (docs/tools.md, Conventions). One row per
-- (actor, key): the fingerprint of the first call's arguments and its result, written in
-- the transaction that records the message, so a retried or concurrent call with the key
-- finds it (or waits for it) and replays the result. Rows older than 24 h are ignored
-- and purged by the scheduler's retention pass.
CREATE TABLE IF NOT EXISTS idempotency_keys (
    actor TEXT NOT NULL,
    key TEXT NOT NULL,
    tool TEXT NOT NULL,
    args_hash TEXT NOT NULL,
    result JSONB NOT NULL,
    created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (actor, key)
);
CREATE INDEX IF NOT EXISTS idempotency_keys_created_idx ON idempotency_keys (created_at);
