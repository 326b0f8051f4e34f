DROP TABLE IF EXISTS operator_login_failures;
DROP TABLE IF EXISTS operator_sessions;
DROP TABLE IF EXISTS operators;
