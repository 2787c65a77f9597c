-- Patch policies (issue 24, SPEC "Patch policy"): the global layer (one
-- locked policy per role scope, seeded here), site policies and device
-- filter policies. Rules, exclusions, defaults and the maintenance window
-- are validated documents (internal/patches "Policy"); the hierarchy
-- global -> site -> device filter is evaluated by
-- internal/patches.EvaluateHierarchy.

-- +goose Up
CREATE TABLE patch_policies (
    id                 bigserial   PRIMARY KEY,
    name               text        NOT NULL CHECK (name <> '' AND length(name) <= 120),
    type               text        NOT NULL CHECK (type IN ('global', 'site', 'device_filter')),
    role_scope         text        NOT NULL CHECK (role_scope IN ('Server', 'Workstation')),
    locked             boolean     NOT NULL DEFAULT false,
    enabled            boolean     NOT NULL DEFAULT true,
    site_id            bigint      REFERENCES sites (id) ON DELETE CASCADE,
    -- A device filter policy goes with its filter.
    device_filter_id   bigint      REFERENCES device_filters (id) ON DELETE CASCADE,
    rules              jsonb       NOT NULL DEFAULT '[]',
    exclusions         jsonb       NOT NULL DEFAULT '[]',
    defaults           jsonb       NOT NULL DEFAULT '{}',
    maintenance_window jsonb,
    created_by         text        NOT NULL DEFAULT '',
    created_at         timestamptz NOT NULL DEFAULT now(),
    updated_at         timestamptz NOT NULL DEFAULT now(),
    last_evaluated_at  timestamptz,
    CHECK ((type = 'site') = (site_id IS NOT NULL)),
    CHECK ((type = 'device_filter') = (device_filter_id IS NOT NULL)),
    CHECK ((type = 'global') = locked)
);
-- One global policy per role scope.
CREATE UNIQUE INDEX patch_policies_global_idx ON patch_policies (role_scope) WHERE type = 'global';
CREATE INDEX patch_policies_site_idx ON patch_policies (site_id) WHERE site_id IS NOT NULL;

INSERT INTO patch_policies (name, type, role_scope, locked, created_by, defaults)
VALUES ('Global (Server)', 'global', 'Server', true, 'system', '{"deferral_days": 0, "reboot_policy": "never"}'),
       ('Global (Workstation)', 'global', 'Workstation', true, 'system', '{"deferral_days": 0, "reboot_policy": "never"}');

-- +goose Down
DROP TABLE patch_policies;
