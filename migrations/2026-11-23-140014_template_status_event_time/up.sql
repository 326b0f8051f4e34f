-- When the platform decided the template's stored status (the status webhook's own time,
-- or the moment a sync read it). A status event older than this is not applied.
ALTER TABLE templates ADD COLUMN status_event_at timestamptz;
