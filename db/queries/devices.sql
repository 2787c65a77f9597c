-- name: DeviceInsert :one
INSERT INTO devices (guid, hostname, site_id) VALUES (@guid, @hostname, @site_id) RETURNING *;
