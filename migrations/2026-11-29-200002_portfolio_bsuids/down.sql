DROP TABLE IF EXISTS portfolio_bsuids;
