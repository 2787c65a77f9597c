-- +goose Up

-- The Engine's WireGuard identity (issue 23): one key pair for the whole
-- deployment, the private half sealed by the master cipher. A single row.
CREATE TABLE wireguard_server (
    id               smallint    PRIMARY KEY CHECK (id = 1),
    private_sealed   bytea       NOT NULL,
    sealed_key_id    bytea       NOT NULL,
    public_key       text        NOT NULL,
    created_at       timestamptz NOT NULL DEFAULT now()
);

-- Which replica owns the Engine's WireGuard key and UDP port: a lease the
-- owner renews; another replica takes it only once it lapsed.
CREATE TABLE wireguard_owner (
    id          smallint    PRIMARY KEY CHECK (id = 1),
    replica     text        NOT NULL,
    expires_at  timestamptz NOT NULL,
    acquired_at timestamptz NOT NULL DEFAULT now()
);

-- One persistent tunnel per device. ip_offset is the device's address in
-- the tunnel network (network base + offset); offset 1 is the Engine's.
-- A purge removes the row with the device; quarantine and revoke remove
-- it too (tunnels.Service.TearDown), freeing the address.
CREATE TABLE tunnels (
    device_guid        text        PRIMARY KEY REFERENCES devices (guid) ON DELETE CASCADE,
    tunnel_id          text        NOT NULL UNIQUE,
    ip_offset          integer     NOT NULL UNIQUE CHECK (ip_offset >= 2),
    agent_public_key   text        NOT NULL,
    endpoint_used      text        NOT NULL DEFAULT '',
    created_at         timestamptz NOT NULL DEFAULT now(),
    ensured_at         timestamptz NOT NULL DEFAULT now(),
    ready_at           timestamptz,
    last_handshake_at  timestamptz,
    last_error         text        NOT NULL DEFAULT ''
);

-- +goose Down
DROP TABLE tunnels;
DROP TABLE wireguard_owner;
DROP TABLE wireguard_server;
