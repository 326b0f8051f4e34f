-- Flows (docs/schema.md, "Flows"). Two small tables beside messages, so the lookups by
-- flow token get their own indexes instead of one more index on messages.

-- The flow token of each flow message Warden sent (a flow message, or a template with a
-- FLOW button): how a submission whose flow message has no wamid yet finds it.
CREATE TABLE IF NOT EXISTS flow_sends (
    message_id UUID        PRIMARY KEY REFERENCES messages (id) ON DELETE CASCADE,
    flow_token TEXT        NOT NULL,
    created_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS flow_sends_token_idx ON flow_sends (flow_token);

-- A customer's flow submission (an inbound nfm_reply), one row per inbound message. The
-- answers stay in the message's content (so retention and forgetting erase them with it);
-- this row is the index: whose number, which token, which flow message. flow_token and
-- flow_message_id are null while unknown and resolved again on every read.
CREATE TABLE IF NOT EXISTS flow_responses (
    message_id      UUID        PRIMARY KEY REFERENCES messages (id) ON DELETE CASCADE,
    sender_id       TEXT        NOT NULL,
    flow_token      TEXT,
    context_wamid   TEXT,
    flow_message_id UUID,
    received_at     TIMESTAMPTZ NOT NULL
);
CREATE INDEX IF NOT EXISTS flow_responses_token_idx
    ON flow_responses (flow_token, received_at DESC);
CREATE INDEX IF NOT EXISTS flow_responses_flow_message_idx
    ON flow_responses (flow_message_id) WHERE flow_message_id IS NOT NULL;
-- Submissions known only by the flow message they answer (no token in the response).
CREATE INDEX IF NOT EXISTS flow_responses_context_idx
    ON flow_responses (context_wamid) WHERE flow_token IS NULL;
