-- +goose Up

-- The Engine's own signing keys (device tokens, pending MFA, enrollment
-- nonces) are sealed by the master cipher (issue 13 item 14). A row keeps
-- its plaintext `key` only until the first unlock after this migration,
-- which seals it into key_sealed and clears `key` (internal/aegis
-- ServerKey). public_key is the non-secret half of an asymmetric key, so a
-- process whose cipher is locked can still verify what it signed.
ALTER TABLE server_keys ALTER COLUMN key DROP NOT NULL;
ALTER TABLE server_keys ADD COLUMN key_sealed bytea;
ALTER TABLE server_keys ADD COLUMN public_key bytea;
ALTER TABLE server_keys ADD CONSTRAINT server_keys_key_present CHECK (key IS NOT NULL OR key_sealed IS NOT NULL);

-- +goose Down
-- Sealed keys cannot be unsealed here: they are dropped, and the Engine
-- generates new ones (device access tokens are refreshed).
DELETE FROM server_keys WHERE key IS NULL;
ALTER TABLE server_keys DROP CONSTRAINT server_keys_key_present;
ALTER TABLE server_keys DROP COLUMN public_key;
ALTER TABLE server_keys DROP COLUMN key_sealed;
ALTER TABLE server_keys ALTER COLUMN key SET NOT NULL;
