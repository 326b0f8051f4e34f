-- Remote agents: who may call the gateway over HTTP, with what scopes and guardrails.
-- The API key itself is never stored: `key_id` finds the row, `key_hash` is
-- HMAC-SHA256(key = key_salt, message = the key's secret part).
CREATE TABLE IF NOT EXISTS agents (
    name                  TEXT PRIMARY KEY,
    key_id                TEXT NOT NULL UNIQUE,
    key_salt              BYTEA NOT NULL,
    key_hash              BYTEA NOT NULL,
    scopes                TEXT[] NOT NULL,
    status                TEXT NOT NULL DEFAULT 'active',   -- active, suspended, revoked
    max_sends_per_minute  INT,                              -- NULL: no limit
    max_marketing_per_day INT,                              -- NULL: no limit
    allowed_message_types TEXT[],                           -- NULL: every category
    created_at            TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at            TIMESTAMPTZ NOT NULL DEFAULT now()
);

-- Guardrail counters, one row per agent, limit and window (calendar minute / UTC day).
-- Counted in the send's own transaction, so a refused or rolled-back send counts nothing.
CREATE TABLE IF NOT EXISTS agent_usage (
    agent        TEXT NOT NULL,
    kind         TEXT NOT NULL,           -- sends_per_minute, marketing_per_day
    window_start TIMESTAMPTZ NOT NULL,
    used         INT NOT NULL,
    PRIMARY KEY (agent, kind, window_start)
);

-- Who created each outbound message (messages has no room for another column).
CREATE TABLE IF NOT EXISTS message_actors (
    message_id UUID PRIMARY KEY,
    actor      TEXT NOT NULL
);
