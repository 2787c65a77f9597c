-- +goose Up
-- Keys of the Temporal payload codec (issue 21 item 1): every workflow and
-- activity payload is sealed with AES-256-GCM under one of these, so a
-- history read straight from Temporal holds ciphertext. Each key is sealed
-- by the master cipher's data key; data_key_id says which data key was
-- current when it was made, and a rotation of the data key starts a new
-- payload key (one per data key) while re-sealing the old ones, which stay
-- readable for the histories they sealed.
CREATE TABLE temporal_payload_keys (
    id          text        PRIMARY KEY,
    key_sealed  bytea       NOT NULL,
    data_key_id bytea       NOT NULL UNIQUE,
    created_at  timestamptz NOT NULL DEFAULT now()
);

-- +goose Down
DROP TABLE temporal_payload_keys;
