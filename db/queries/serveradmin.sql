-- name: ServerPostgresVersion :one
-- The PostgreSQL server's version, for GET /api/server/overview.
SELECT current_setting('server_version')::text AS version;
