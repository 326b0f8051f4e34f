-- What the platform said about a business number's throughput (80 mps default; 1,000 after
-- a THROUGHPUT_UPGRADE; 20 in coexistence with the WhatsApp Business app). One row per
-- channel; no row: RATE_LIMIT_MPS.
CREATE TABLE IF NOT EXISTS number_throughput (
    channel TEXT PRIMARY KEY,
    high_throughput BOOLEAN NOT NULL DEFAULT false,
    coexistence BOOLEAN NOT NULL DEFAULT false,
    -- Where the last change came from (e.g. `webhook THROUGHPUT_UPGRADE`, `platform is_on_biz_app`).
    source TEXT NOT NULL,
    display_phone_number TEXT,
    updated_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
