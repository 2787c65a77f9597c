-- +goose Up

-- Failed sign-in attempts with increasing delays (issue 13, items 1, 2
-- and 7), shared by every Engine replica. One row per key (a username, an
-- account's MFA, a client address): failures since the count last decayed
-- and the time before which the next attempt is refused. A success deletes
-- the row.
CREATE TABLE auth_throttle (
    key             text        PRIMARY KEY,
    failures        integer     NOT NULL,
    last_failure_at timestamptz NOT NULL,
    blocked_until   timestamptz NOT NULL
);

-- +goose Down
DROP TABLE auth_throttle;
