DROP TABLE IF EXISTS call_permission_requests;
DROP TABLE IF EXISTS call_permissions;
