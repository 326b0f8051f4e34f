-- How far status webhooks have got: the newest platform timestamp among the status events
-- the webhook server has committed (one row). The dispatcher resends a send a crash left
-- unknown only once webhooks emitted after its claim have arrived without its own.
CREATE TABLE IF NOT EXISTS webhook_progress (
    id             SMALLINT PRIMARY KEY DEFAULT 1 CHECK (id = 1),
    status_through TIMESTAMPTZ NOT NULL
);
