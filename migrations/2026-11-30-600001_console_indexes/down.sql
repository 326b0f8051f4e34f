DROP INDEX IF EXISTS customers_updated_idx;
DROP INDEX IF EXISTS customers_username_trgm_idx;
DROP INDEX IF EXISTS customers_phone_prefix_idx;
DROP INDEX IF EXISTS audit_logs_actor_id_idx;
DROP INDEX IF EXISTS audit_logs_action_id_idx;
DROP INDEX IF EXISTS audit_logs_action_time_idx;
DROP INDEX IF EXISTS messages_created_idx;
-- pg_trgm stays: other objects may use it.
