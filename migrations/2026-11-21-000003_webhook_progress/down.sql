DROP TABLE IF EXISTS webhook_progress;
