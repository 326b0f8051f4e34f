DROP TABLE IF EXISTS message_holds;
DROP TABLE IF EXISTS portfolio_reach;
DROP TABLE IF EXISTS portfolio_limit;
