-- +goose Up

-- DPoP proof identifiers already accepted (RFC 9449 section 11.1). The key
-- is SHA-256 over the proof key's thumbprint and the jti, so one device
-- cannot burn another's jti and the table holds no raw proof material. Every
-- Engine replica inserts here, so a proof replayed to another replica is
-- refused too. Rows are kept just past the iat window; after that the iat
-- check alone refuses the proof and a periodic sweep deletes them.
CREATE TABLE dpop_jtis (
    jti_hash   bytea       PRIMARY KEY,
    expires_at timestamptz NOT NULL
);
CREATE INDEX dpop_jtis_expires_idx ON dpop_jtis (expires_at);

-- +goose Down
DROP TABLE dpop_jtis;
