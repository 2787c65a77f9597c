-- +goose Up

-- Activity history is scoped by each row's own site (issue 13 item 16),
-- no longer through the hostname's current device: a device that moved,
-- or a hostname a new device reuses, must not carry another site's
-- history along. Rows recorded without a site take their device's site;
-- this backfills the rows written before that rule (their device's
-- current site is the best record left of where they happened).
UPDATE device_activity a SET site_id = d.site_id
FROM devices d
WHERE a.site_id IS NULL AND a.device_guid = d.guid;

CREATE INDEX device_activity_site_idx ON device_activity (site_id);

-- +goose Down
DROP INDEX device_activity_site_idx;
