-- +goose Up

-- Each process admitted to the cluster gets an Internal key of its own
-- (issue 26), so one member's key is retired without touching another's.
-- admission_id names the admission a key was made for; operator keys
-- (POST /api/server/internal-keys) have none, and only they count toward
-- the two active keys an operator may hold.
ALTER TABLE internal_hmac_keys ADD COLUMN admission_id text;

-- +goose Down
ALTER TABLE internal_hmac_keys DROP COLUMN admission_id;
