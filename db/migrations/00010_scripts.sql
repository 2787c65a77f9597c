-- +goose Up

-- Script signing (issue 11, SPEC Authentication rule 6): the Engine signs
-- every script payload with an Ed25519 key whose private half is sealed by
-- the master cipher. One key is active (signs); after a rotation the
-- earlier one stays "previous" (still trusted by agents, never signs) until
-- the next rotation retires it.
CREATE TABLE script_signing_keys (
    -- hex of the first 8 bytes of sha256(public key)
    key_id          text        PRIMARY KEY,
    public_key      bytea       NOT NULL CHECK (length(public_key) = 32),
    -- aegis.Seal of the 32-byte Ed25519 seed; sealed_key_id is the cipher
    -- key that sealed it (a force-reset cipher cannot open it any more).
    private_sealed  bytea       NOT NULL,
    sealed_key_id   bytea       NOT NULL,
    state           text        NOT NULL CHECK (state IN ('active', 'previous', 'retired')),
    created_at      timestamptz NOT NULL DEFAULT now(),
    retired_at      timestamptz
);
CREATE UNIQUE INDEX script_signing_keys_active_idx ON script_signing_keys (state) WHERE state = 'active';
CREATE UNIQUE INDEX script_signing_keys_previous_idx ON script_signing_keys (state) WHERE state = 'previous';

-- Which keys each agent reported trusting (heartbeat), for the
-- "agents on the current key" count. Written only when it changes.
CREATE TABLE device_script_trust (
    device_guid text        PRIMARY KEY REFERENCES devices (guid) ON DELETE CASCADE,
    key_ids     text[]      NOT NULL,
    reported_at timestamptz NOT NULL DEFAULT now()
);

-- What a run executes (ad-hoc runs have no assembly version to point at)
-- and, per device, the signed payload the serve process made for it: a
-- worker process that delivers it later may not hold the master cipher.
ALTER TABLE job_runs
    ADD COLUMN body            text    NOT NULL DEFAULT '',
    ADD COLUMN parameters      jsonb   NOT NULL DEFAULT '{}',
    ADD COLUMN timeout_seconds int     NOT NULL DEFAULT 300,
    ADD COLUMN run_when_online boolean NOT NULL DEFAULT false;

ALTER TABLE job_run_results
    ADD COLUMN signed      jsonb,
    ADD COLUMN duration_ms bigint;
CREATE INDEX job_run_results_pending_idx ON job_run_results (run_id) WHERE status = 'pending';

-- +goose Down
DROP INDEX job_run_results_pending_idx;
ALTER TABLE job_run_results DROP COLUMN signed, DROP COLUMN duration_ms;
ALTER TABLE job_runs DROP COLUMN body, DROP COLUMN parameters, DROP COLUMN timeout_seconds, DROP COLUMN run_when_online;
DROP TABLE device_script_trust;
DROP TABLE script_signing_keys;
