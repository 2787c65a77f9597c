-- +goose Up
-- Shared automation objects get an owner and a site scope (issue 21 item
-- 2): a site-limited operator must not change an assembly, flow or device
-- filter that work reaching other sites' devices uses. site_scope is the
-- union of the scopes of everyone who saved the object (NULL: every site,
-- so only callers with every site may change it); owner_user_id is who
-- created it (kept for display and audit; authority comes from the scope).
-- Existing objects become shared (NULL): administrator-writable.
ALTER TABLE assemblies
    ADD COLUMN owner_user_id bigint REFERENCES users (id) ON DELETE SET NULL,
    ADD COLUMN site_scope    bigint[];
ALTER TABLE automation_workflows
    ADD COLUMN owner_user_id bigint REFERENCES users (id) ON DELETE SET NULL,
    ADD COLUMN site_scope    bigint[];
ALTER TABLE device_filters
    ADD COLUMN owner_user_id bigint REFERENCES users (id) ON DELETE SET NULL,
    ADD COLUMN site_scope    bigint[];

UPDATE assemblies a SET owner_user_id = u.id FROM users u WHERE u.username = lower(a.created_by);
UPDATE automation_workflows w SET owner_user_id = u.id FROM users u WHERE u.username = lower(w.created_by);
UPDATE device_filters f SET owner_user_id = u.id FROM users u WHERE u.username = lower(f.created_by);

-- Flow steps name the assembly version (and its body's SHA-256) chosen
-- when the flow was saved; a run executes exactly that. Steps saved
-- before get the version current now.
UPDATE automation_workflows w SET steps = COALESCE((
    SELECT jsonb_agg(s.step || jsonb_build_object(
               'assembly_version', a.current_version,
               'assembly_sha256', encode(v.body_sha256, 'hex')) ORDER BY s.n)
    FROM jsonb_array_elements(w.steps) WITH ORDINALITY AS s(step, n)
    LEFT JOIN assemblies a ON a.id = (s.step->>'assembly_id')::bigint
    LEFT JOIN assembly_versions v ON v.assembly_id = a.id AND v.version = a.current_version
), '[]'::jsonb)
WHERE jsonb_typeof(w.steps) = 'array' AND jsonb_array_length(w.steps) > 0;

-- +goose Down
ALTER TABLE device_filters DROP COLUMN site_scope, DROP COLUMN owner_user_id;
ALTER TABLE automation_workflows DROP COLUMN site_scope, DROP COLUMN owner_user_id;
ALTER TABLE assemblies DROP COLUMN site_scope, DROP COLUMN owner_user_id;
