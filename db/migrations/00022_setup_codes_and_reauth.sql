-- +goose Up

-- First-run setup codes (issue 13 item 4). `cairn serve` issues one while
-- first-run setup is unfinished and prints it to its own terminal and log;
-- the setup steps refuse callers without one. Only the SHA-256 of a code
-- is kept, one row per issued code, so a code printed by any replica is
-- accepted by every replica. Finishing setup deletes every row.
CREATE TABLE setup_codes (
    code_hash  bytea PRIMARY KEY,
    created_at timestamptz NOT NULL DEFAULT now()
);

-- Re-authentication with a passkey before a sensitive action (item 5)
-- runs its own kind of ceremony, bound to the signed-in operator.
ALTER TABLE webauthn_ceremonies DROP CONSTRAINT webauthn_ceremonies_kind_check;
ALTER TABLE webauthn_ceremonies ADD CONSTRAINT webauthn_ceremonies_kind_check
    CHECK (kind IN ('register', 'authenticate', 'reauth'));

-- +goose Down
DELETE FROM webauthn_ceremonies WHERE kind = 'reauth';
ALTER TABLE webauthn_ceremonies DROP CONSTRAINT webauthn_ceremonies_kind_check;
ALTER TABLE webauthn_ceremonies ADD CONSTRAINT webauthn_ceremonies_kind_check
    CHECK (kind IN ('register', 'authenticate'));
DROP TABLE setup_codes;
