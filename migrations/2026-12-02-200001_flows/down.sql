DROP TABLE IF EXISTS flow_responses;
DROP TABLE IF EXISTS flow_sends;
