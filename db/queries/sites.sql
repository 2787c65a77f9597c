-- name: SiteList :many
-- all_sites or the listed IDs: the caller's site scope.
SELECT s.*, (SELECT count(*) FROM devices d WHERE d.site_id = s.id) AS device_count
FROM sites s
WHERE @all_sites::bool OR s.id = ANY(@site_ids::bigint[])
ORDER BY lower(s.name), s.id;

-- name: SiteGet :one
SELECT s.*, (SELECT count(*) FROM devices d WHERE d.site_id = s.id) AS device_count
FROM sites s WHERE s.id = @id;

-- name: SiteGetBySlug :one
SELECT * FROM sites WHERE slug = @slug;

-- name: SiteInsert :one
INSERT INTO sites (name, slug) VALUES (@name, @slug) RETURNING *;

-- name: SiteUpdate :one
UPDATE sites SET name = @name, slug = @slug, updated_at = now() WHERE id = @id RETURNING *;

-- name: SiteDeviceCounts :many
SELECT s.id, count(d.guid) AS device_count
FROM sites s LEFT JOIN devices d ON d.site_id = s.id
WHERE s.id = ANY(@ids::bigint[])
GROUP BY s.id;

-- name: SiteDeleteMany :execrows
DELETE FROM sites WHERE id = ANY(@ids::bigint[]);

-- name: DeviceSiteMap :many
SELECT d.hostname, d.site_id, s.name AS site_name
FROM devices d JOIN sites s ON s.id = d.site_id
WHERE @all_sites::bool OR d.site_id = ANY(@site_ids::bigint[])
ORDER BY d.hostname;

-- name: SiteAutoApprovalSet :one
UPDATE sites SET auto_approve_until = sqlc.narg(until), updated_at = now() WHERE id = @id RETURNING *;
