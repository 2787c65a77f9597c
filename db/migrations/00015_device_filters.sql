-- +goose Up

-- Device filters, saved device-list views, and the form of inventory
-- filters match on (issue 9, docs/api.md "Device filters and saved
-- views"). Filters are compiled to SQL by internal/devicefilters.

-- cairn_version_key is the one rule for comparing versions: the leading
-- dotted numeric part of a version (after an optional epoch "N:" and a
-- leading "v"), as numbers, with trailing zero parts dropped so 1.2 and
-- 1.2.0 are equal; anything after that part ("-1ubuntu1", "-beta") is
-- ignored. NULL when the version has no leading number (unknown: it
-- never compares true). One expression, so COPYing millions of software
-- rows stays cheap; internal/devicefilters computes the same key for
-- filter values (TestVersionKeyMatchesSQL).
-- +goose StatementBegin
CREATE FUNCTION cairn_version_key(v text) RETURNS numeric[]
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT string_to_array(regexp_replace(substring(v FROM '^\s*(?:[0-9]+:)?[vV]?([0-9]+(?:\.[0-9]+)*)'), '(\.0+)+$', ''), '.')::numeric[]
$$;
-- +goose StatementEnd

-- Comparable versions, computed by PostgreSQL on every write (the COPY of
-- software rows included), so ingest and filters share the rule above.
ALTER TABLE device_software ADD COLUMN version_key numeric[] GENERATED ALWAYS AS (cairn_version_key(version)) STORED;
CREATE INDEX device_software_version_idx ON device_software (name_key, version_key) INCLUDE (device_guid);
ALTER TABLE devices ADD COLUMN agent_version_key numeric[] GENERATED ALWAYS AS (cairn_version_key(agent_version)) STORED;
ALTER TABLE device_inventory ADD COLUMN os_version_key numeric[] GENERATED ALWAYS AS (cairn_version_key(os->>'version')) STORED;

-- A device's IP addresses (host addresses, no prefix), replaced whenever
-- its network inventory changes; ip_address conditions match on these.
CREATE TABLE device_addresses (
    device_guid text NOT NULL REFERENCES devices (guid) ON DELETE CASCADE,
    address     inet NOT NULL,
    PRIMARY KEY (device_guid, address)
);
CREATE INDEX device_addresses_address_idx ON device_addresses USING gist (address inet_ops);

-- Fill addresses from the network inventory already stored; an address
-- PostgreSQL cannot read is skipped, as ingest skips it.
-- +goose StatementBegin
CREATE FUNCTION pg_temp.try_inet(a text) RETURNS inet LANGUAGE plpgsql AS $$
BEGIN
    RETURN host(split_part(split_part(a, '/', 1), '%', 1)::inet)::inet;
EXCEPTION WHEN others THEN
    RETURN NULL;
END
$$;
-- +goose StatementEnd
INSERT INTO device_addresses (device_guid, address)
SELECT DISTINCT i.device_guid, pg_temp.try_inet(a.addr)
FROM device_inventory i,
     jsonb_array_elements(CASE WHEN jsonb_typeof(i.network) = 'array' THEN i.network ELSE '[]' END) n,
     jsonb_array_elements_text(CASE WHEN jsonb_typeof(n->'addresses') = 'array' THEN n->'addresses' ELSE '[]' END) a(addr)
WHERE pg_temp.try_inet(a.addr) IS NOT NULL;

-- Saved device filters: shared objects (evaluation is always scoped).
CREATE TABLE device_filters (
    id          bigserial   PRIMARY KEY,
    name        text        NOT NULL CHECK (name <> '' AND length(name) <= 120),
    description text        NOT NULL DEFAULT '',
    tree        jsonb       NOT NULL,
    created_by  text        NOT NULL DEFAULT '',
    updated_by  text        NOT NULL DEFAULT '',
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX device_filters_name_idx ON device_filters (lower(name));

-- Saved device-list views, per operator, optionally shared. A view's
-- saved filter going away leaves the view without it.
CREATE TABLE device_list_views (
    id             bigserial   PRIMARY KEY,
    owner_id       bigint      NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    name           text        NOT NULL CHECK (name <> '' AND length(name) <= 120),
    columns        text[]      NOT NULL,
    sort_column    text,
    sort_direction text        CHECK (sort_direction IN ('asc', 'desc')),
    filter_id      bigint      REFERENCES device_filters (id) ON DELETE SET NULL,
    tree           jsonb,
    shared         boolean     NOT NULL DEFAULT false,
    created_at     timestamptz NOT NULL DEFAULT now(),
    updated_at     timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX device_list_views_owner_name_idx ON device_list_views (owner_id, lower(name));
CREATE INDEX device_list_views_shared_idx ON device_list_views (id) WHERE shared;

-- The paged device list sorts and narrows on these at 50,000 devices.
CREATE INDEX devices_last_seen_idx ON devices (last_seen NULLS FIRST, guid);
CREATE INDEX devices_site_hostname_idx ON devices (site_id, lower(hostname));
CREATE INDEX devices_os_idx ON devices (lower(operating_system), guid);
CREATE INDEX devices_description_idx ON devices (lower(description), guid);
CREATE INDEX devices_agent_version_idx ON devices (agent_version_key NULLS FIRST, guid);
CREATE INDEX device_patches_pending_idx ON device_patches (device_guid) WHERE state = 'pending';

-- +goose Down
DROP INDEX device_patches_pending_idx;
DROP INDEX devices_agent_version_idx;
DROP INDEX devices_description_idx;
DROP INDEX devices_os_idx;
DROP INDEX devices_site_hostname_idx;
DROP INDEX devices_last_seen_idx;
DROP TABLE device_list_views;
DROP TABLE device_filters;
DROP TABLE device_addresses;
ALTER TABLE device_inventory DROP COLUMN os_version_key;
ALTER TABLE devices DROP COLUMN agent_version_key;
DROP INDEX device_software_version_idx;
ALTER TABLE device_software DROP COLUMN version_key;
DROP FUNCTION cairn_version_key(text);
