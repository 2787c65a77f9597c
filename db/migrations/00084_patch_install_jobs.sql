-- Patch install jobs (issue 24): scheduled jobs of kind patch_install.
-- A run of one creates its patch_installs rows (run_id set) and hands
-- them to the devices' patch lanes once its fire holds its sites'
-- scheduled-lane slots; a policy evaluation's run also carries the
-- reboots that follow its installs, handed over after them.

-- +goose Up
ALTER TABLE patch_reboots ADD COLUMN run_id text NOT NULL DEFAULT '';
CREATE INDEX patch_installs_run_idx ON patch_installs (run_id) WHERE run_id <> '';
CREATE INDEX patch_reboots_run_idx ON patch_reboots (run_id) WHERE run_id <> '';

-- +goose Down
DROP INDEX patch_reboots_run_idx;
DROP INDEX patch_installs_run_idx;
ALTER TABLE patch_reboots DROP COLUMN run_id;
