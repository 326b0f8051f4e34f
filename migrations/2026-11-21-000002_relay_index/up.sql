-- The scheduler's relay looks for queued rows by publish time (lost stream messages).
CREATE INDEX IF NOT EXISTS messages_queued_published_idx ON messages (published_at) WHERE status = 'queued';
