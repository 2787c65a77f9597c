-- +goose Up

-- Extra scopes of personal API tokens (issue 21 item 11). A read token
-- reads device content (file text, registry values, process command lines,
-- transferred files) only with 'read:device-content'; write tokens can run
-- scripts on devices anyway and read it without. Existing tokens get none.
ALTER TABLE api_tokens ADD COLUMN scopes text[] NOT NULL DEFAULT '{}'
    CHECK (scopes <@ ARRAY['read:device-content']::text[]);

-- +goose Down
ALTER TABLE api_tokens DROP COLUMN scopes;
