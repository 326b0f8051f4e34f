-- Warden's schema. Changes after this migration are additive only (new tables, new
-- nullable or defaulted columns, new indexes), so restarting a newer binary upgrades
-- a deployment in place.

CREATE TABLE IF NOT EXISTS customers (
    phone               TEXT PRIMARY KEY,            -- canonical digits, E.164 without '+'
    country             TEXT NOT NULL DEFAULT 'DEFAULT',
    opt_in_marketing    BOOLEAN NOT NULL DEFAULT TRUE,
    opt_in_utility      BOOLEAN NOT NULL DEFAULT TRUE,
    opt_changed_at      TIMESTAMPTZ,
    opt_change_reason   TEXT,
    tags                TEXT[] NOT NULL DEFAULT '{}',
    engagement_score    DOUBLE PRECISION NOT NULL DEFAULT 0,
    last_interaction_at TIMESTAMPTZ,
    undeliverable_at    TIMESTAMPTZ,                  -- platform 131026
    marketing_limited_at TIMESTAMPTZ,                 -- platform 131049: no marketing for 24 h
    created_at          TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at          TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS customers_tags_idx ON customers USING GIN (tags);
CREATE INDEX IF NOT EXISTS customers_last_interaction_idx ON customers (last_interaction_at);

CREATE TABLE IF NOT EXISTS conversations (
    id                UUID PRIMARY KEY DEFAULT gen_random_uuid(),
    customer_phone    TEXT NOT NULL REFERENCES customers (phone),
    channel           TEXT NOT NULL DEFAULT 'whatsapp',
    conversation_type TEXT NOT NULL DEFAULT 'service',
    last_inbound_at   TIMESTAMPTZ,
    last_outbound_at  TIMESTAMPTZ,
    window_expires_at TIMESTAMPTZ,
    archived_at       TIMESTAMPTZ,
    created_at        TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at        TIMESTAMPTZ NOT NULL DEFAULT now(),
    UNIQUE (customer_phone, channel)
);
CREATE INDEX IF NOT EXISTS conversations_channel_expiry_idx
    ON conversations (channel, window_expires_at) WHERE archived_at IS NULL;

CREATE TABLE IF NOT EXISTS templates (
    id               UUID PRIMARY KEY DEFAULT gen_random_uuid(),
    name             TEXT NOT NULL,
    locale           TEXT NOT NULL,
    category         TEXT NOT NULL,                   -- lower case: marketing, utility, authentication
    status           TEXT NOT NULL,                   -- APPROVED, PENDING, REJECTED, PAUSED, DISABLED ...
    body_text        TEXT NOT NULL,
    platform_id      TEXT,
    rejection_reason TEXT,
    created_at       TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at       TIMESTAMPTZ NOT NULL DEFAULT now(),
    UNIQUE (name, locale)
);
CREATE INDEX IF NOT EXISTS templates_status_idx ON templates (status, category, locale);

CREATE TABLE IF NOT EXISTS campaigns (
    id               UUID PRIMARY KEY DEFAULT gen_random_uuid(),
    name             TEXT NOT NULL,
    campaign_type    TEXT NOT NULL,                   -- broadcast, marketing, utility
    status           TEXT NOT NULL,                   -- scheduled, running, sending, paused, cancelled, completed, failed
    deliver_at       TIMESTAMPTZ NOT NULL,
    template_name    TEXT NOT NULL,
    locale           TEXT NOT NULL DEFAULT 'en',
    variables        JSONB NOT NULL DEFAULT '{}',
    audience_filter  JSONB NOT NULL DEFAULT '{}',
    sent_count       INTEGER NOT NULL DEFAULT 0,
    delivered_count  INTEGER NOT NULL DEFAULT 0,
    failed_count     INTEGER NOT NULL DEFAULT 0,
    total_recipients INTEGER NOT NULL DEFAULT 0,
    enqueued_count   INTEGER NOT NULL DEFAULT 0,
    audience_cursor  TEXT,                            -- last customer phone fanned out (resume point)
    audience_done    BOOLEAN NOT NULL DEFAULT FALSE,
    status_reason    TEXT,
    paused_at        TIMESTAMPTZ,
    lease_until      TIMESTAMPTZ,                     -- scheduler claim
    lease_owner      TEXT,
    created_at       TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at       TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS campaigns_due_idx ON campaigns (status, deliver_at);

CREATE TABLE IF NOT EXISTS messages (
    id                     UUID PRIMARY KEY,          -- the message_id agents see; never changes
    customer_phone         TEXT NOT NULL,
    channel                TEXT NOT NULL DEFAULT 'whatsapp',
    direction              TEXT NOT NULL,             -- outbound, inbound
    message_type           TEXT NOT NULL,             -- as asked: text, template, marketing, utility, service
    category               TEXT NOT NULL,             -- effective: service, marketing, utility, authentication
    status                 TEXT NOT NULL,             -- scheduled, queued, sending, sent, delivered, read, failed, received
    content                JSONB NOT NULL DEFAULT '{}',
    template_name          TEXT,
    template_locale        TEXT,
    campaign_id            UUID REFERENCES campaigns (id),
    deliver_at             TIMESTAMPTZ,
    wamid                  TEXT,
    retry_count            INTEGER NOT NULL DEFAULT 0,
    attempt                INTEGER NOT NULL DEFAULT 0,
    published_at           TIMESTAMPTZ,               -- NULL while queued: the relay republishes
    lease_until            TIMESTAMPTZ,               -- dispatcher / scheduler claim
    lease_owner            TEXT,
    next_attempt_at        TIMESTAMPTZ,
    error_code             INTEGER,
    error_category         TEXT,
    error_can_retry        BOOLEAN,
    error_explanation      TEXT,
    error_suggested_action TEXT,
    trace_context          JSONB,                     -- W3C trace context of the accepting call
    sent_at                TIMESTAMPTZ,
    delivered_at           TIMESTAMPTZ,
    read_at                TIMESTAMPTZ,
    failed_at              TIMESTAMPTZ,
    created_at             TIMESTAMPTZ NOT NULL DEFAULT now(),
    updated_at             TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX IF NOT EXISTS messages_wamid_idx ON messages (wamid) WHERE wamid IS NOT NULL;
CREATE INDEX IF NOT EXISTS messages_scheduled_due_idx ON messages (deliver_at) WHERE status = 'scheduled';
CREATE INDEX IF NOT EXISTS messages_unpublished_idx ON messages (created_at)
    WHERE status = 'queued' AND published_at IS NULL;
CREATE INDEX IF NOT EXISTS messages_campaign_idx ON messages (campaign_id, status) WHERE campaign_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS messages_customer_idx ON messages (customer_phone, created_at);
CREATE INDEX IF NOT EXISTS messages_sending_lease_idx ON messages (lease_until) WHERE status = 'sending';

-- One row per accepted message that counts toward a frequency limit.
CREATE TABLE IF NOT EXISTS message_frequencies (
    id             BIGSERIAL PRIMARY KEY,
    customer_phone TEXT NOT NULL,
    category       TEXT NOT NULL,
    message_id     UUID NOT NULL,
    counted_at     TIMESTAMPTZ NOT NULL DEFAULT now(),
    UNIQUE (message_id)
);
CREATE INDEX IF NOT EXISTS message_frequencies_lookup_idx
    ON message_frequencies (customer_phone, category, counted_at);

CREATE TABLE IF NOT EXISTS policies (
    id            TEXT PRIMARY KEY,                   -- the policy file's id (upsert key)
    policy_type   TEXT NOT NULL,
    message_types TEXT[] NOT NULL DEFAULT '{}',
    enabled       BOOLEAN NOT NULL DEFAULT TRUE,
    definition    JSONB NOT NULL,
    position      INTEGER NOT NULL,
    in_file       BOOLEAN NOT NULL DEFAULT TRUE,      -- false once removed from the file
    updated_at    TIMESTAMPTZ NOT NULL DEFAULT now()
);

CREATE TABLE IF NOT EXISTS error_knowledge_base (
    code              INTEGER PRIMARY KEY,
    title             TEXT NOT NULL,
    category          TEXT NOT NULL,
    can_retry         BOOLEAN NOT NULL,
    handling          TEXT NOT NULL,                  -- retry, fix_request, record_state, halt
    human_explanation TEXT NOT NULL,
    suggested_action  TEXT NOT NULL,
    updated_at        TIMESTAMPTZ NOT NULL DEFAULT now()
);

CREATE TABLE IF NOT EXISTS audit_logs (
    id          BIGSERIAL PRIMARY KEY,
    occurred_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    actor       TEXT NOT NULL,                        -- mcp-gateway, webhook, dispatcher, scheduler, warden-admin
    action      TEXT NOT NULL,
    entity_type TEXT NOT NULL,
    entity_id   TEXT NOT NULL,
    details     JSONB NOT NULL DEFAULT '{}'
);
CREATE INDEX IF NOT EXISTS audit_logs_entity_idx ON audit_logs (entity_type, entity_id, occurred_at);

CREATE TABLE IF NOT EXISTS conversation_pricing (
    id                    SERIAL PRIMARY KEY,
    country               TEXT NOT NULL,              -- ISO 3166 alpha-2, or DEFAULT
    conversation_type     TEXT NOT NULL,              -- marketing, utility, authentication, service
    cost_e4               BIGINT NOT NULL,            -- cost per message in 1/10000 of the currency
    currency              TEXT NOT NULL,
    pricing_category      TEXT NOT NULL,
    pricing_model_version TEXT NOT NULL,
    effective_date        DATE NOT NULL,
    UNIQUE (country, conversation_type, effective_date)
);

-- Webhook events already applied (replays change nothing).
CREATE TABLE IF NOT EXISTS webhook_events (
    event_key   TEXT PRIMARY KEY,
    kind        TEXT NOT NULL,
    received_at TIMESTAMPTZ NOT NULL DEFAULT now()
);

-- phone_number_quality_update events, newest last (context for get_account_quality).
CREATE TABLE IF NOT EXISTS account_quality_events (
    id                   BIGSERIAL PRIMARY KEY,
    event                TEXT NOT NULL,
    current_limit        TEXT,
    display_phone_number TEXT,
    payload              JSONB NOT NULL DEFAULT '{}',
    received_at          TIMESTAMPTZ NOT NULL DEFAULT now()
);
