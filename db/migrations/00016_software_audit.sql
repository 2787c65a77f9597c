-- +goose Up

-- Software audit (issue 9, docs/api.md "Software audit"). The audit counts
-- devices per software variant (name, version, publisher) across the
-- caller's sites; a GROUP BY over millions of device_software rows per
-- request is far too slow, so the counts are kept exact in an aggregate,
-- in step with device_software in the same transaction as every change.
--
-- device_software carries its device's site so the aggregate can be kept
-- per site. A composite foreign key to devices (guid, site_id) keeps the
-- copy right: ON UPDATE CASCADE moves it with the device (site assignment,
-- enrollment into another site), ON DELETE CASCADE removes it on purge,
-- and a wrong site_id cannot be written at all.
ALTER TABLE device_software ADD COLUMN site_id bigint;
UPDATE device_software s SET site_id = d.site_id FROM devices d WHERE d.guid = s.device_guid;
ALTER TABLE device_software ALTER COLUMN site_id SET NOT NULL;
CREATE UNIQUE INDEX devices_guid_site_idx ON devices (guid, site_id);
ALTER TABLE device_software DROP CONSTRAINT device_software_device_guid_fkey;
ALTER TABLE device_software ADD CONSTRAINT device_software_device_site_fkey
    FOREIGN KEY (device_guid, site_id) REFERENCES devices (guid, site_id) ON UPDATE CASCADE ON DELETE CASCADE;

-- A writer that does not know the column (a raw COPY, an older replica
-- during a rolling upgrade) gets its device's site filled in. Ingest
-- passes it, so the trigger function does not run for it.
-- +goose StatementBegin
CREATE FUNCTION device_software_fill_site() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    SELECT d.site_id INTO NEW.site_id FROM devices d WHERE d.guid = NEW.device_guid;
    RETURN NEW;
END
$$;
-- +goose StatementEnd
CREATE TRIGGER device_software_fill_site BEFORE INSERT ON device_software
    FOR EACH ROW WHEN (NEW.site_id IS NULL) EXECUTE FUNCTION device_software_fill_site();

-- Devices per software variant per site, and over every site (what an
-- administrator's audit reads, so its first page is an index scan).
-- Rows whose count reaches zero are removed.
CREATE TABLE software_audit_counts (
    site_id      bigint NOT NULL,
    name_key     text   NOT NULL,
    version      text   NOT NULL,
    name         text   NOT NULL,
    publisher    text   NOT NULL,
    device_count bigint NOT NULL,
    PRIMARY KEY (site_id, name_key, version, name, publisher)
);
CREATE TABLE software_audit_totals (
    name_key     text   NOT NULL,
    version      text   NOT NULL,
    name         text   NOT NULL,
    publisher    text   NOT NULL,
    device_count bigint NOT NULL,
    PRIMARY KEY (name_key, version, name, publisher)
);
CREATE INDEX software_audit_totals_count_desc_idx ON software_audit_totals (device_count DESC, name_key, version, name, publisher);
CREATE INDEX software_audit_totals_count_asc_idx ON software_audit_totals (device_count, name_key, version, name, publisher);

-- How the counts stay exact without deadlocks. Statement-level triggers
-- with transition tables (they fire for COPY and for the rows a cascade
-- from devices changes) only stage each statement's net change per
-- variant, in rows private to the transaction. At commit one deferred
-- trigger applies the transaction's summed change: per-site rows first,
-- then totals, each upserted in key order. Every transaction takes its
-- aggregate row locks in that one global order, and only at commit, so
-- concurrent ingests of overlapping software queue behind each other
-- instead of deadlocking, and hold the hot rows (a browser every device
-- has) for the length of one statement. A details post that replaces a
-- device's 150 rows but changed one package touches two variants, since
-- unchanged rows sum to zero and are skipped.
CREATE UNLOGGED TABLE software_audit_deltas (
    xid          xid8   NOT NULL DEFAULT pg_current_xact_id(),
    site_id      bigint NOT NULL,
    name_key     text   NOT NULL,
    version      text   NOT NULL,
    name         text   NOT NULL,
    publisher    text   NOT NULL,
    delta        bigint NOT NULL
);
CREATE INDEX software_audit_deltas_xid_idx ON software_audit_deltas (xid);
CREATE UNLOGGED TABLE software_audit_pending (
    xid xid8 PRIMARY KEY
);

-- +goose StatementBegin
CREATE FUNCTION software_audit_stage() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO software_audit_deltas (site_id, name_key, version, name, publisher, delta)
        SELECT site_id, name_key, version, name, publisher, count(*)
        FROM new_rows GROUP BY site_id, name_key, version, name, publisher;
    ELSIF TG_OP = 'DELETE' THEN
        INSERT INTO software_audit_deltas (site_id, name_key, version, name, publisher, delta)
        SELECT site_id, name_key, version, name, publisher, -count(*)
        FROM old_rows GROUP BY site_id, name_key, version, name, publisher;
    ELSE
        INSERT INTO software_audit_deltas (site_id, name_key, version, name, publisher, delta)
        SELECT site_id, name_key, version, name, publisher, sum(d)
        FROM (SELECT site_id, name_key, version, name, publisher, 1 AS d FROM new_rows
              UNION ALL
              SELECT site_id, name_key, version, name, publisher, -1 AS d FROM old_rows) x
        GROUP BY site_id, name_key, version, name, publisher
        HAVING sum(d) <> 0;
    END IF;
    IF FOUND THEN
        INSERT INTO software_audit_pending (xid) VALUES (pg_current_xact_id()) ON CONFLICT DO NOTHING;
    END IF;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION software_audit_apply() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    negative bigint;
BEGIN
    INSERT INTO software_audit_counts AS c (site_id, name_key, version, name, publisher, device_count)
    SELECT site_id, name_key, version, name, publisher, sum(delta)
    FROM software_audit_deltas WHERE xid = NEW.xid
    GROUP BY site_id, name_key, version, name, publisher
    HAVING sum(delta) <> 0
    ORDER BY site_id, name_key, version, name, publisher
    ON CONFLICT (site_id, name_key, version, name, publisher)
        DO UPDATE SET device_count = c.device_count + EXCLUDED.device_count;

    INSERT INTO software_audit_totals AS t (name_key, version, name, publisher, device_count)
    SELECT name_key, version, name, publisher, sum(delta)
    FROM software_audit_deltas WHERE xid = NEW.xid
    GROUP BY name_key, version, name, publisher
    HAVING sum(delta) <> 0
    ORDER BY name_key, version, name, publisher
    ON CONFLICT (name_key, version, name, publisher)
        DO UPDATE SET device_count = t.device_count + EXCLUDED.device_count;

    -- Rows this transaction brought to zero go; below zero means the
    -- aggregate was out of step, which must fail loudly, not be hidden.
    WITH gone AS (
        DELETE FROM software_audit_counts c
        USING (SELECT DISTINCT site_id, name_key, version, name, publisher
               FROM software_audit_deltas WHERE xid = NEW.xid AND delta < 0) d
        WHERE c.site_id = d.site_id AND c.name_key = d.name_key AND c.version = d.version
          AND c.name = d.name AND c.publisher = d.publisher AND c.device_count <= 0
        RETURNING c.device_count
    ) SELECT count(*) FILTER (WHERE device_count < 0) INTO negative FROM gone;
    IF negative > 0 THEN
        RAISE EXCEPTION 'software_audit_counts is out of step with device_software';
    END IF;
    WITH gone AS (
        DELETE FROM software_audit_totals t
        USING (SELECT DISTINCT name_key, version, name, publisher
               FROM software_audit_deltas WHERE xid = NEW.xid AND delta < 0) d
        WHERE t.name_key = d.name_key AND t.version = d.version
          AND t.name = d.name AND t.publisher = d.publisher AND t.device_count <= 0
        RETURNING t.device_count
    ) SELECT count(*) FILTER (WHERE device_count < 0) INTO negative FROM gone;
    IF negative > 0 THEN
        RAISE EXCEPTION 'software_audit_totals is out of step with device_software';
    END IF;

    DELETE FROM software_audit_deltas WHERE xid = NEW.xid;
    DELETE FROM software_audit_pending WHERE xid = NEW.xid;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

CREATE TRIGGER device_software_audit_insert AFTER INSERT ON device_software
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION software_audit_stage();
CREATE TRIGGER device_software_audit_delete AFTER DELETE ON device_software
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION software_audit_stage();
CREATE TRIGGER device_software_audit_update AFTER UPDATE ON device_software
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION software_audit_stage();
CREATE CONSTRAINT TRIGGER software_audit_apply AFTER INSERT ON software_audit_pending
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION software_audit_apply();

-- TRUNCATE fires no row or DELETE triggers; emptying device_software
-- empties the aggregate with it.
-- +goose StatementBegin
CREATE FUNCTION software_audit_truncate() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    TRUNCATE software_audit_counts, software_audit_totals;
    RETURN NULL;
END
$$;
-- +goose StatementEnd
CREATE TRIGGER device_software_audit_truncate AFTER TRUNCATE ON device_software
    FOR EACH STATEMENT EXECUTE FUNCTION software_audit_truncate();

-- The aggregate of what is stored already.
INSERT INTO software_audit_counts (site_id, name_key, version, name, publisher, device_count)
SELECT site_id, name_key, version, name, publisher, count(*)
FROM device_software GROUP BY site_id, name_key, version, name, publisher;
INSERT INTO software_audit_totals (name_key, version, name, publisher, device_count)
SELECT name_key, version, name, publisher, sum(device_count)
FROM software_audit_counts GROUP BY name_key, version, name, publisher;

-- Icons operators upload for software (PNG, ICO or sanitized SVG),
-- content-addressed by the SHA-256 of their bytes.
CREATE TABLE software_icons (
    hash         text        PRIMARY KEY CHECK (hash ~ '^[0-9a-f]{64}$'),
    content_type text        NOT NULL CHECK (content_type IN ('image/png', 'image/x-icon', 'image/svg+xml')),
    data         bytea       NOT NULL,
    created_by   text        NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now()
);

-- Global software rules, keyed by the case-insensitive software name
-- (name_key, the form device_software matches on) and, for uninstall
-- rules, a version ('' means every version).
--
-- Icon override: an uploaded icon (icon_hash), an icon resource on the
-- endpoint for the agent to extract (display_icon), or no icon at all.
CREATE TABLE software_icon_overrides (
    name_key     text        PRIMARY KEY,
    name         text        NOT NULL,
    icon_hash    text        REFERENCES software_icons (hash),
    display_icon text        NOT NULL DEFAULT '',
    clear_icon   boolean     NOT NULL DEFAULT false,
    created_by   text        NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    updated_by   text        NOT NULL,
    updated_at   timestamptz NOT NULL DEFAULT now(),
    CHECK ((icon_hash IS NOT NULL)::int + (display_icon <> '')::int + clear_icon::int = 1)
);
CREATE INDEX software_icon_overrides_icon_idx ON software_icon_overrides (icon_hash);

-- Uninstall override: the silent uninstall command to run instead of the
-- one the endpoint registers.
CREATE TABLE software_uninstall_overrides (
    name_key   text        NOT NULL,
    version    text        NOT NULL,
    name       text        NOT NULL,
    executable text        NOT NULL,
    arguments  text        NOT NULL DEFAULT '',
    command    text        NOT NULL,
    created_by text        NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_by text        NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (name_key, version)
);

-- Uninstall blocklist: the uninstall route refuses these.
CREATE TABLE software_uninstall_blocks (
    name_key   text        NOT NULL,
    version    text        NOT NULL,
    name       text        NOT NULL,
    reason     text        NOT NULL,
    created_by text        NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_by text        NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (name_key, version)
);

-- +goose Down
DROP TABLE software_uninstall_blocks;
DROP TABLE software_uninstall_overrides;
DROP TABLE software_icon_overrides;
DROP TABLE software_icons;
DROP TRIGGER device_software_audit_truncate ON device_software;
DROP FUNCTION software_audit_truncate();
DROP TRIGGER device_software_audit_update ON device_software;
DROP TRIGGER device_software_audit_delete ON device_software;
DROP TRIGGER device_software_audit_insert ON device_software;
DROP TABLE software_audit_pending;
DROP TABLE software_audit_deltas;
DROP FUNCTION software_audit_apply();
DROP FUNCTION software_audit_stage();
DROP TABLE software_audit_totals;
DROP TABLE software_audit_counts;
DROP TRIGGER device_software_fill_site ON device_software;
DROP FUNCTION device_software_fill_site();
ALTER TABLE device_software DROP CONSTRAINT device_software_device_site_fkey;
ALTER TABLE device_software ADD CONSTRAINT device_software_device_guid_fkey
    FOREIGN KEY (device_guid) REFERENCES devices (guid) ON DELETE CASCADE;
DROP INDEX devices_guid_site_idx;
ALTER TABLE device_software DROP COLUMN site_id;
