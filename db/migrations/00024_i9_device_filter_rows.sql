-- +goose Up

-- The columns filter conditions read from devices, one narrow row per
-- device, kept in step by triggers in the same transaction as every change
-- to devices (issue 9, docs/benchmarks.md "Device grid"). A filter's total
-- is a count over every device in scope; from devices that means reading
-- each wide row (metrics, keys, status JSON: about 500 bytes) and folding
-- the case of its strings, which for an all-sites caller at 50,000 devices
-- took most of the preview's budget. Here the rows are narrow and the
-- strings are stored lower-cased (lower() with the database's collation,
-- the function conditions apply), so internal/devicefilters compares them
-- without folding case per row; every other column keeps its name on
-- devices, so the compiler's fragments read either table.
CREATE TABLE device_filter_rows (
    guid                   text        PRIMARY KEY,
    site_id                bigint      NOT NULL,
    hostname_lower         text        NOT NULL,
    description_lower      text        NOT NULL,
    operating_system_lower text        NOT NULL,
    agent_version_lower    text        NOT NULL,
    agent_version_key      numeric[],
    trust_state            text        NOT NULL,
    last_seen              timestamptz,
    socket_replica         text,
    socket_seen_at         timestamptz
);
CREATE INDEX device_filter_rows_site_idx ON device_filter_rows (site_id);

-- +goose StatementBegin
CREATE FUNCTION device_filter_rows_sync() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        DELETE FROM device_filter_rows WHERE guid = OLD.guid;
        RETURN NULL;
    END IF;
    IF TG_OP = 'UPDATE' THEN
        UPDATE device_filter_rows SET guid = NEW.guid, site_id = NEW.site_id, hostname_lower = lower(NEW.hostname),
            description_lower = lower(NEW.description), operating_system_lower = lower(NEW.operating_system),
            agent_version_lower = lower(NEW.agent_version), agent_version_key = NEW.agent_version_key,
            trust_state = NEW.trust_state, last_seen = NEW.last_seen,
            socket_replica = NEW.socket_replica, socket_seen_at = NEW.socket_seen_at
        WHERE guid = OLD.guid;
        RETURN NULL;
    END IF;
    INSERT INTO device_filter_rows (guid, site_id, hostname_lower, description_lower, operating_system_lower,
        agent_version_lower, agent_version_key, trust_state, last_seen, socket_replica, socket_seen_at)
    VALUES (NEW.guid, NEW.site_id, lower(NEW.hostname), lower(NEW.description), lower(NEW.operating_system),
        lower(NEW.agent_version), NEW.agent_version_key, NEW.trust_state, NEW.last_seen, NEW.socket_replica,
        NEW.socket_seen_at);
    RETURN NULL;
END
$$;
-- +goose StatementEnd

CREATE TRIGGER device_filter_rows_write AFTER INSERT OR DELETE ON devices
    FOR EACH ROW EXECUTE FUNCTION device_filter_rows_sync();
-- An update that changes none of the copied columns (metrics only, boot
-- ID, token version) costs nothing more; heartbeats and status posts move
-- last_seen, so each updates one narrow row too (docs/benchmarks.md).
CREATE TRIGGER device_filter_rows_update AFTER UPDATE ON devices
    FOR EACH ROW WHEN ((OLD.guid, OLD.site_id, OLD.hostname, OLD.description, OLD.operating_system, OLD.agent_version,
        OLD.agent_version_key, OLD.trust_state, OLD.last_seen, OLD.socket_replica, OLD.socket_seen_at)
        IS DISTINCT FROM (NEW.guid, NEW.site_id, NEW.hostname, NEW.description, NEW.operating_system, NEW.agent_version,
        NEW.agent_version_key, NEW.trust_state, NEW.last_seen, NEW.socket_replica, NEW.socket_seen_at))
    EXECUTE FUNCTION device_filter_rows_sync();

INSERT INTO device_filter_rows (guid, site_id, hostname_lower, description_lower, operating_system_lower,
    agent_version_lower, agent_version_key, trust_state, last_seen, socket_replica, socket_seen_at)
SELECT guid, site_id, lower(hostname), lower(description), lower(operating_system),
    lower(agent_version), agent_version_key, trust_state, last_seen, socket_replica, socket_seen_at
FROM devices;

-- +goose Down
DROP TRIGGER device_filter_rows_update ON devices;
DROP TRIGGER device_filter_rows_write ON devices;
DROP FUNCTION device_filter_rows_sync();
DROP TABLE device_filter_rows;
