-- A BSUID is scoped to a business portfolio: one person has another BSUID in every
-- portfolio. The default sender's portfolio keeps its BSUID on the customer row
-- (`customers.bsuid`, as before); another portfolio's BSUIDs live here, each naming the
-- customer it belongs to. A parent BSUID spans the linked portfolios and stays on the
-- customer row.
CREATE TABLE IF NOT EXISTS portfolio_bsuids (
    portfolio      TEXT NOT NULL,
    bsuid          TEXT NOT NULL,
    customer_phone TEXT NOT NULL,
    created_at     TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (portfolio, bsuid)
);
CREATE UNIQUE INDEX IF NOT EXISTS portfolio_bsuids_bsuid_key ON portfolio_bsuids (bsuid);
CREATE INDEX IF NOT EXISTS portfolio_bsuids_customer_idx ON portfolio_bsuids (customer_phone, portfolio);
