-- Conversation history: keyset pagination of one customer's messages, newest
-- first, on (created_at, id); a deep page costs what the first does.
CREATE INDEX IF NOT EXISTS messages_history_idx
    ON messages (customer_phone, channel, created_at, id);
-- Edits and revokes by the message they change (history applies them to the original).
-- The expression must stay identical to the one in warden-core/src/conversation_view.rs.
CREATE INDEX IF NOT EXISTS messages_amends_idx
    ON messages ((COALESCE(content->'edit'->>'original_message_id',
                           content->'revoke'->>'original_message_id')))
    WHERE message_type IN ('edit', 'revoke');
