-- Sender protection (docs/compliance.md, "Sender protection"): a number whose quality
-- turned RED or that met a halt-class platform error sends no marketing until its quality
-- recovers or an operator resumes it. One row per protected sender (its stored key).
CREATE TABLE IF NOT EXISTS sender_protection (
    sender_id TEXT PRIMARY KEY,
    reason    TEXT NOT NULL,
    source    TEXT NOT NULL,   -- quality_flagged, platform_error, ...
    since     TIMESTAMPTZ NOT NULL DEFAULT now()
);
