ALTER TABLE templates DROP COLUMN status_event_at;
