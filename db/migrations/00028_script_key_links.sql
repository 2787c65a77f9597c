-- +goose Up
-- Signed key chains (issue 21 item 4): at every script-key rotation the
-- outgoing active key signs the new trusted list (proto.KeyList), and
-- agents accept a list only as such a link. The links are kept so an
-- agent that was offline for several rotations can walk them in order; a
-- row planted here changes nothing, since no agent accepts a link that a
-- key it trusts did not sign.
CREATE TABLE script_key_links (
    seq        bigint      PRIMARY KEY CHECK (seq > 0),
    -- proto.Signed over the KeyList JSON
    signed     jsonb       NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);

-- +goose Down
DROP TABLE script_key_links;
