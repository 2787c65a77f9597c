-- Software audit and global software rules (docs/api.md "Software audit").
-- The audit reads the aggregates migration 00016 keeps in step with
-- device_software; q is lower-cased by the caller and matched as a plain
-- substring of name_key (strpos: no LIKE wildcards to escape).

-- name: SoftwareAuditAllByName :many
SELECT name_key, version, name, publisher, device_count FROM software_audit_totals
WHERE @q::text = '' OR strpos(name_key, @q::text) > 0
ORDER BY name_key, version, name, publisher
LIMIT @max_rows OFFSET @skip;

-- name: SoftwareAuditAllByNameDesc :many
SELECT name_key, version, name, publisher, device_count FROM software_audit_totals
WHERE @q::text = '' OR strpos(name_key, @q::text) > 0
ORDER BY name_key DESC, version DESC, name DESC, publisher DESC
LIMIT @max_rows OFFSET @skip;

-- name: SoftwareAuditAllByCount :many
SELECT name_key, version, name, publisher, device_count FROM software_audit_totals
WHERE @q::text = '' OR strpos(name_key, @q::text) > 0
ORDER BY device_count, name_key, version, name, publisher
LIMIT @max_rows OFFSET @skip;

-- name: SoftwareAuditAllByCountDesc :many
SELECT name_key, version, name, publisher, device_count FROM software_audit_totals
WHERE @q::text = '' OR strpos(name_key, @q::text) > 0
ORDER BY device_count DESC, name_key, version, name, publisher
LIMIT @max_rows OFFSET @skip;

-- name: SoftwareAuditAllCount :one
SELECT count(*) FROM software_audit_totals
WHERE @q::text = '' OR strpos(name_key, @q::text) > 0;

-- name: SoftwareAuditScoped :many
-- The sum over the caller's sites; ties break by name ascending.
SELECT name_key, version, name, publisher, sum(device_count)::bigint AS device_count, count(*) OVER () AS total
FROM software_audit_counts
WHERE site_id = ANY(@site_ids::bigint[]) AND (@q::text = '' OR strpos(name_key, @q::text) > 0)
GROUP BY name_key, version, name, publisher
ORDER BY
    CASE WHEN @sort::text = '-device_count' THEN sum(device_count) END DESC,
    CASE WHEN @sort::text = 'device_count' THEN sum(device_count) END,
    CASE WHEN @sort::text = '-name' THEN name_key END DESC,
    CASE WHEN @sort::text = '-name' THEN version END DESC,
    CASE WHEN @sort::text = '-name' THEN name END DESC,
    CASE WHEN @sort::text = '-name' THEN publisher END DESC,
    name_key, version, name, publisher
LIMIT @max_rows OFFSET @skip;

-- name: SoftwareAuditScopedCount :one
SELECT count(*) FROM (
    SELECT DISTINCT name_key, version, name, publisher FROM software_audit_counts
    WHERE site_id = ANY(@site_ids::bigint[]) AND (@q::text = '' OR strpos(name_key, @q::text) > 0)
) v;

-- name: SoftwareAuditScopeCoversAll :one
-- Whether the listed sites are every site (the totals then answer).
SELECT NOT EXISTS (SELECT 1 FROM sites WHERE NOT (id = ANY(@site_ids::bigint[])))::bool AS covers;

-- name: SoftwareRulesForNames :many
-- The rules touching a page of audit rows: kind is icon, block or override.
SELECT 'icon'::text AS kind, name_key, ''::text AS version, icon_hash FROM software_icon_overrides
WHERE name_key = ANY(@name_keys::text[])
UNION ALL
SELECT 'block'::text, name_key, version, NULL FROM software_uninstall_blocks
WHERE name_key = ANY(@name_keys::text[])
UNION ALL
SELECT 'override'::text, name_key, version, NULL FROM software_uninstall_overrides
WHERE name_key = ANY(@name_keys::text[]);

-- name: SoftwareDeviceRows :many
-- The rows of one in-scope device with one name (the row a rule is made
-- from must exist there).
SELECT s.name, s.version, s.publisher FROM devices d
JOIN device_software s ON s.device_guid = d.guid
WHERE d.guid = @guid AND s.name_key = @name_key
ORDER BY s.version;

-- name: SoftwareIconInsert :exec
INSERT INTO software_icons (hash, content_type, data, created_by)
VALUES (@hash, @content_type, @data, @created_by)
ON CONFLICT (hash) DO NOTHING;

-- name: SoftwareIconGet :one
SELECT hash, content_type, data FROM software_icons WHERE hash = @hash;

-- name: SoftwareIconDeleteUnused :exec
-- An icon no rule names any more goes, unless a device's software still
-- shows it (an agent sent the same bytes as its own icon).
DELETE FROM software_icons i WHERE i.hash = @hash
AND NOT EXISTS (SELECT 1 FROM software_icon_overrides o WHERE o.icon_hash = i.hash)
AND NOT EXISTS (SELECT 1 FROM device_inventory v
                WHERE v.software @> jsonb_build_array(jsonb_build_object('icon_hash', i.hash::text)));

-- name: SoftwareIconsKnown :many
-- Which of the hashes the Engine stores icons for (software rows an
-- agent reports may name only those).
SELECT hash FROM software_icons WHERE hash = ANY(@hashes::text[]);

-- name: SoftwareIconOverrideGetForUpdate :one
SELECT * FROM software_icon_overrides WHERE name_key = @name_key FOR UPDATE;

-- name: SoftwareIconOverrideUpsert :one
INSERT INTO software_icon_overrides (name_key, name, icon_hash, display_icon, clear_icon, created_by, updated_by)
VALUES (@name_key, @name, sqlc.narg(icon_hash), @display_icon, @clear_icon, @actor, @actor)
ON CONFLICT (name_key) DO UPDATE SET name = EXCLUDED.name, icon_hash = EXCLUDED.icon_hash,
    display_icon = EXCLUDED.display_icon, clear_icon = EXCLUDED.clear_icon,
    updated_by = EXCLUDED.updated_by, updated_at = now()
RETURNING *;

-- name: SoftwareIconOverrideDelete :one
DELETE FROM software_icon_overrides WHERE name_key = @name_key RETURNING *;

-- name: SoftwareIconOverrideList :many
SELECT * FROM software_icon_overrides ORDER BY name_key;

-- name: SoftwareUninstallOverrideUpsert :one
INSERT INTO software_uninstall_overrides (name_key, version, name, executable, arguments, command, created_by, updated_by)
VALUES (@name_key, @version, @name, @executable, @arguments, @command, @actor, @actor)
ON CONFLICT (name_key, version) DO UPDATE SET name = EXCLUDED.name, executable = EXCLUDED.executable,
    arguments = EXCLUDED.arguments, command = EXCLUDED.command,
    updated_by = EXCLUDED.updated_by, updated_at = now()
RETURNING *;

-- name: SoftwareUninstallOverrideDelete :one
DELETE FROM software_uninstall_overrides WHERE name_key = @name_key AND version = @version RETURNING *;

-- name: SoftwareUninstallOverrideList :many
SELECT * FROM software_uninstall_overrides ORDER BY name_key, version;

-- name: SoftwareUninstallBlockUpsert :one
INSERT INTO software_uninstall_blocks (name_key, version, name, reason, created_by, updated_by)
VALUES (@name_key, @version, @name, @reason, @actor, @actor)
ON CONFLICT (name_key, version) DO UPDATE SET name = EXCLUDED.name, reason = EXCLUDED.reason,
    updated_by = EXCLUDED.updated_by, updated_at = now()
RETURNING *;

-- name: SoftwareUninstallBlockDeleteMatching :many
-- Every block that stops the row (name, version): the version's own rule
-- and the every-version rule; without a version, every rule of the name.
DELETE FROM software_uninstall_blocks
WHERE name_key = @name_key AND (@all_versions::bool OR version IN ('', @version::text))
RETURNING *;

-- name: SoftwareUninstallBlockList :many
SELECT * FROM software_uninstall_blocks ORDER BY name_key, version;

-- name: SoftwareUninstallRules :many
-- The block and override rules that apply to one (name, version), the
-- version's own rule first.
SELECT 'block'::text AS kind, version, reason AS detail FROM software_uninstall_blocks
WHERE name_key = @name_key::text AND version IN ('', @version::text)
UNION ALL
SELECT 'override'::text, version, command FROM software_uninstall_overrides
WHERE name_key = @name_key::text AND version IN ('', @version::text)
ORDER BY 1, 2 DESC;

-- name: SoftwareDeviceFind :one
-- A device by hostname inside the caller's scope.
SELECT guid, hostname, site_id, operating_system FROM devices d
WHERE lower(d.hostname) = lower(@hostname::text) AND (@all_sites::bool OR d.site_id = ANY(@site_ids::bigint[]));
