-- +goose Up

-- Onboarding redeploy jobs (issue 27 item 6, agent behaviour 16): an
-- operator redeploys the agent of a device with a new one-time
-- enrollment code. The job's workflow (onboarding:<id>) sends the code to
-- the agent if it is connected and follows the job until the device has
-- enrolled with that code, or the code expired or was canceled.
CREATE TABLE onboarding_jobs (
    id                 text        PRIMARY KEY,
    device_guid        text        NOT NULL REFERENCES devices (guid) ON DELETE CASCADE,
    -- The site the device enrolls into (its own, or the one it moves to).
    site_id            bigint      NOT NULL REFERENCES sites (id) ON DELETE CASCADE,
    enrollment_code_id bigint      REFERENCES enrollment_codes (id) ON DELETE SET NULL,
    operation_id       text        NOT NULL,
    -- pending | sent | agent_offline | enrolled | expired | canceled | failed
    status             text        NOT NULL DEFAULT 'pending',
    reason             text        NOT NULL DEFAULT '',
    last_error         text        NOT NULL DEFAULT '',
    requested_by       text        NOT NULL,
    retry_of           text        REFERENCES onboarding_jobs (id) ON DELETE SET NULL,
    expires_at         timestamptz NOT NULL,
    created_at         timestamptz NOT NULL DEFAULT now(),
    updated_at         timestamptz NOT NULL DEFAULT now(),
    finished_at        timestamptz
);
-- One open job per device.
CREATE UNIQUE INDEX onboarding_jobs_open_idx ON onboarding_jobs (device_guid) WHERE finished_at IS NULL;
CREATE INDEX onboarding_jobs_created_idx ON onboarding_jobs (created_at DESC, id);

-- A redeploy's code is for one device: its key is approved at once, any
-- other key waits for an operator as with any code.
ALTER TABLE enrollment_codes ADD COLUMN redeploy_guid text;

-- +goose Down
ALTER TABLE enrollment_codes DROP COLUMN redeploy_guid;
DROP TABLE onboarding_jobs;
