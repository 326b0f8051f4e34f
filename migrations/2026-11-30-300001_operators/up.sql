-- The operator console (docs/console.md): the people who answer for the agents.
-- `warden-admin operators create NAME --role viewer|operator|admin`; the password is kept
-- only as an argon2 hash (PHC string). A disabled operator keeps its row, so what it did
-- stays attributed (`operator:NAME` in audit_logs).
CREATE TABLE IF NOT EXISTS operators (
    name           TEXT PRIMARY KEY,
    role           TEXT NOT NULL CHECK (role IN ('viewer', 'operator', 'admin')),
    password_hash  TEXT NOT NULL,
    status         TEXT NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'disabled')),
    created_at     TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at     TIMESTAMPTZ NOT NULL DEFAULT now()
);

-- Console sessions, server-side so any replica serves them and logout ends them at once.
-- The cookie holds a random token; the row keeps only its SHA-256. Each session has its
-- own CSRF token, which every form carries.
CREATE TABLE IF NOT EXISTS operator_sessions (
    token_hash     BYTEA PRIMARY KEY,
    operator_name  TEXT NOT NULL REFERENCES operators (name) ON DELETE CASCADE,
    csrf_token     TEXT NOT NULL,
    created_at     TIMESTAMPTZ NOT NULL DEFAULT now(),
    expires_at     TIMESTAMPTZ NOT NULL
);
CREATE INDEX IF NOT EXISTS operator_sessions_operator_idx ON operator_sessions (operator_name);
CREATE INDEX IF NOT EXISTS operator_sessions_expires_idx ON operator_sessions (expires_at);

-- Failed logins by the name tried (known or not), for the throttle: five within a minute
-- refuse that name (429) until the oldest leaves the minute.
CREATE TABLE IF NOT EXISTS operator_login_failures (
    id         BIGSERIAL PRIMARY KEY,
    name       TEXT NOT NULL,
    failed_at  TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS operator_login_failures_name_idx
    ON operator_login_failures (name, failed_at);
