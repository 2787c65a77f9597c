-- +goose Up

ALTER TABLE users ADD COLUMN last_login_at timestamptz;

-- Which sites a non-admin operator may see (admins see every site).
CREATE TABLE user_site_assignments (
    user_id    bigint      NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    site_id    bigint      NOT NULL REFERENCES sites (id) ON DELETE CASCADE,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (user_id, site_id)
);
CREATE INDEX user_site_assignments_site_idx ON user_site_assignments (site_id);

-- The audit trail: every state-changing operator request, who, what, when,
-- from where and how it ended. Never holds request bodies (they may carry
-- secrets).
CREATE TABLE audit_log (
    id          bigserial   PRIMARY KEY,
    at          timestamptz NOT NULL DEFAULT now(),
    username    text        NOT NULL DEFAULT '',
    role        text        NOT NULL DEFAULT '',
    action      text        NOT NULL,
    target      text        NOT NULL DEFAULT '',
    client_addr text        NOT NULL DEFAULT '',
    status      integer     NOT NULL,
    outcome     text        NOT NULL,
    request_id  text        NOT NULL DEFAULT ''
);
CREATE INDEX audit_log_at_idx ON audit_log (at DESC);
CREATE INDEX audit_log_username_idx ON audit_log (username, at DESC);

-- +goose Down
DROP TABLE audit_log;
DROP TABLE user_site_assignments;
ALTER TABLE users DROP COLUMN last_login_at;
