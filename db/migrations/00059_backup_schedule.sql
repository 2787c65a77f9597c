-- +goose Up

-- Issue 26: scheduled automatic backups (docs/architecture.md "Scheduled
-- backups"). One row of settings: where the encrypted exports go, how
-- often, and the retention (keep the newest backup of each of the last
-- N days, weeks and months). Configuration: backups carry it.
CREATE TABLE backup_schedule (
    id             boolean     PRIMARY KEY DEFAULT true CHECK (id),
    enabled        boolean     NOT NULL DEFAULT false,
    directory      text        NOT NULL DEFAULT '',
    interval_hours integer     NOT NULL DEFAULT 24 CHECK (interval_hours BETWEEN 1 AND 168),
    keep_daily     integer     NOT NULL DEFAULT 7 CHECK (keep_daily BETWEEN 0 AND 366),
    keep_weekly    integer     NOT NULL DEFAULT 4 CHECK (keep_weekly BETWEEN 0 AND 260),
    keep_monthly   integer     NOT NULL DEFAULT 12 CHECK (keep_monthly BETWEEN 0 AND 240),
    updated_by     text        NOT NULL DEFAULT '',
    updated_at     timestamptz NOT NULL DEFAULT now()
);

-- What the scheduled backups did: run history, never in a backup.
CREATE TABLE backup_runs (
    id          text        PRIMARY KEY,
    -- scheduled (an export written by the schedule)
    kind        text        NOT NULL,
    -- running | succeeded | failed
    status      text        NOT NULL DEFAULT 'running',
    file        text        NOT NULL DEFAULT '',
    size_bytes  bigint      NOT NULL DEFAULT 0,
    pruned      text[]      NOT NULL DEFAULT '{}',
    detail      text        NOT NULL DEFAULT '',
    started_at  timestamptz NOT NULL DEFAULT now(),
    finished_at timestamptz
);
CREATE INDEX backup_runs_started_idx ON backup_runs (kind, started_at DESC);

-- +goose Down
DROP TABLE backup_runs;
DROP TABLE backup_schedule;
