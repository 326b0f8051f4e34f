DROP INDEX IF EXISTS messages_queued_published_idx;
