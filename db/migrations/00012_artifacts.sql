-- +goose Up

-- Agent artifacts and signed install links (issue 11, docs/api.md "Agent
-- artifacts and install links").

-- The build each device's agent last reported (status posts), beside the
-- release version it already reports. '' until the agent reports one.
ALTER TABLE devices ADD COLUMN agent_build_id text NOT NULL DEFAULT '';

-- Artifacts the Engine has served, one row per artifact ID. The binaries
-- live on disk (CAIRN_AGENT_ARTIFACTS); the row holds the manifest
-- signature, computed once by a process whose master cipher is unlocked
-- (the script-signing key is sealed), so every replica serves it.
CREATE TABLE agent_artifacts (
    id            text        PRIMARY KEY,
    platform      text        NOT NULL CHECK (platform ~ '^[a-z0-9]+-[a-z0-9]+$'),
    build_id      text        NOT NULL CHECK (build_id <> ''),
    sha256        text        NOT NULL CHECK (length(sha256) = 64),
    size          bigint      NOT NULL CHECK (size > 0),
    -- proto.Signed over {"artifact_id","platform","build_id","sha256","size"};
    -- NULL until signed.
    signature     jsonb,
    signed_at     timestamptz,
    first_seen_at timestamptz NOT NULL DEFAULT now(),
    last_seen_at  timestamptz NOT NULL DEFAULT now()
);

-- The active install link of each site and platform. Its URL is not
-- stored: it is an HMAC (server key agent_install_links) over the artifact
-- ID, platform, site ID, expiry, this nonce and the site's enrollment-code
-- digest, recomputed when the sites are listed. Revoking replaces the
-- nonce and zeroes the counter.
CREATE TABLE agent_install_links (
    site_id        bigint      NOT NULL REFERENCES sites (id) ON DELETE CASCADE,
    platform       text        NOT NULL CHECK (platform ~ '^[a-z0-9]+-[a-z0-9]+$'),
    nonce          bytea       NOT NULL CHECK (length(nonce) = 16),
    -- The expiry the listed URL carries; moved forward (same nonce) as it
    -- nears, so a URL already handed out keeps working until its own.
    expires_at     timestamptz NOT NULL,
    download_count bigint      NOT NULL DEFAULT 0 CHECK (download_count >= 0),
    created_by     text        NOT NULL DEFAULT '',
    created_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (site_id, platform)
);

-- +goose Down
DROP TABLE agent_install_links;
DROP TABLE agent_artifacts;
ALTER TABLE devices DROP COLUMN agent_build_id;
