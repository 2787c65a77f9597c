-- Saved device-list views: per operator, optionally shared.

-- name: DeviceListViewInsert :one
INSERT INTO device_list_views (owner_id, name, columns, sort_column, sort_direction, filter_id, tree, shared)
VALUES (@owner_id, @name, @columns::text[], sqlc.narg(sort_column), sqlc.narg(sort_direction), sqlc.narg(filter_id), @tree, @shared)
RETURNING id;

-- name: DeviceListViewUpdate :exec
UPDATE device_list_views SET name = @name, columns = @columns::text[], sort_column = sqlc.narg(sort_column),
    sort_direction = sqlc.narg(sort_direction), filter_id = sqlc.narg(filter_id), tree = @tree, shared = @shared, updated_at = now()
WHERE id = @id;

-- name: DeviceListViewGet :one
SELECT sqlc.embed(v), u.username AS owner
FROM device_list_views v JOIN users u ON u.id = v.owner_id
WHERE v.id = @id;

-- name: DeviceListViewList :many
-- The caller's own views and those others shared.
SELECT sqlc.embed(v), u.username AS owner
FROM device_list_views v JOIN users u ON u.id = v.owner_id
WHERE v.owner_id = @user_id OR v.shared
ORDER BY lower(v.name), v.id;

-- name: DeviceListViewDelete :exec
DELETE FROM device_list_views WHERE id = @id;
