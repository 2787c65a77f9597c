-- name: ServerPostgresVersion :one
-- The PostgreSQL server's version, for GET /api/server/overview.
SELECT current_setting('server_version')::text AS version;

-- name: ServerSiteWorkload :many
-- Per site, for GET /api/server/workers: devices, those heard from within
-- @online_seconds, agents whose socket a site worker confirmed within
-- @socket_seconds (the gateway's presence, any replica), and the work
-- assigned: agent requests sent (running) or not yet written to a socket
-- (queued), and job runs with a device running or still pending. The
-- windows are measured on the database's clock, as the gateway writes it.
SELECT s.id AS site_id,
    (SELECT count(*) FROM devices d WHERE d.site_id = s.id)::bigint AS total_devices,
    (SELECT count(*) FROM devices d WHERE d.site_id = s.id
        AND d.last_seen > now() - make_interval(secs => @online_seconds::float8))::bigint AS online_devices,
    (SELECT count(*) FROM devices d WHERE d.site_id = s.id AND d.socket_replica IS NOT NULL AND d.socket_replica <> ''
        AND d.socket_seen_at > now() - make_interval(secs => @socket_seconds::float8))::bigint AS connected_agents,
    (SELECT count(*) FROM agent_requests r JOIN devices d ON d.guid = r.device_guid
        WHERE d.site_id = s.id AND r.replica IS NOT NULL AND r.expires_at > now())::bigint AS operations_running,
    (SELECT count(*) FROM agent_requests r JOIN devices d ON d.guid = r.device_guid
        WHERE d.site_id = s.id AND r.replica IS NULL AND r.expires_at > now())::bigint AS operations_queued,
    (SELECT count(DISTINCT jr.run_id) FROM job_run_results jr JOIN job_runs j ON j.id = jr.run_id
        WHERE jr.site_id = s.id AND jr.status = 'running' AND j.status IN ('pending', 'running'))::bigint AS jobs_running,
    (SELECT count(DISTINCT jr.run_id) FROM job_run_results jr JOIN job_runs j ON j.id = jr.run_id
        WHERE jr.site_id = s.id AND jr.status = 'pending' AND j.status IN ('pending', 'running')
        AND NOT EXISTS (SELECT 1 FROM job_run_results o WHERE o.run_id = jr.run_id AND o.site_id = s.id AND o.status = 'running'))::bigint AS jobs_queued
FROM sites s
ORDER BY s.id;
