-- +goose Up

-- Scheduled jobs that target saved device filters (issue 9). A filter is
-- resolved when the job fires; which sites it may reach is fixed when
-- the job is saved: the saver's site scope, recorded here (NULL: every
-- site, an administrator saved it). A filter a job targets cannot be
-- deleted (RESTRICT; the delete answers filter_in_use first).
ALTER TABLE scheduled_jobs ADD COLUMN target_scope bigint[];

CREATE TABLE scheduled_job_filters (
    scheduled_job_id bigint NOT NULL REFERENCES scheduled_jobs (id) ON DELETE CASCADE,
    filter_id        bigint NOT NULL REFERENCES device_filters (id) ON DELETE RESTRICT,
    PRIMARY KEY (scheduled_job_id, filter_id)
);
CREATE INDEX scheduled_job_filters_filter_idx ON scheduled_job_filters (filter_id);

-- +goose Down
DROP TABLE scheduled_job_filters;
ALTER TABLE scheduled_jobs DROP COLUMN target_scope;
