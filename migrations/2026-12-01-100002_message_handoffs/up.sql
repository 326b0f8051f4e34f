-- A campaign chunk's hand-off to the delivery stream. The chunk's accepted messages are
-- written with their published mark already set (a second write of every row, after the
-- stream's ack, was a third of a fan-out's database work) and their ids in one row here,
-- in the chunk's transaction. The row is deleted once the stream has acknowledged every
-- one of them; a row still here after the relay's minimum age is the relay's to publish.
CREATE TABLE IF NOT EXISTS message_handoffs (
    id          BIGSERIAL PRIMARY KEY,
    message_ids UUID[] NOT NULL,
    created_at  TIMESTAMPTZ NOT NULL DEFAULT now()
);
