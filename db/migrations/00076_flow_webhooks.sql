-- +goose Up

-- Inbound webhooks of multi-step automation workflows (issue 27 item 6):
-- an outside system starts a flow by POSTing a body signed with HMAC
-- under the webhook's secret (internal/internalauth's canonical string).
-- The secret is sealed by the master cipher and shown once, at creation
-- or rotation. Runs start with the scope of whoever saved the webhook.
CREATE TABLE automation_workflow_webhooks (
    id                    text        PRIMARY KEY,
    workflow_id           bigint      NOT NULL REFERENCES automation_workflows (id) ON DELETE CASCADE,
    name                  text        NOT NULL,
    -- The devices a run targets when the body names none.
    device_guids          text[]      NOT NULL DEFAULT '{}',
    rate_limit_per_minute int         NOT NULL,
    secret_sealed         bytea       NOT NULL,
    -- The sites of whoever saved it (NULL: every site): a run may reach
    -- only devices inside them.
    site_scope            bigint[],
    created_by            text        NOT NULL,
    created_at            timestamptz NOT NULL DEFAULT now(),
    rotated_at            timestamptz,
    last_triggered_at     timestamptz
);
CREATE INDEX automation_workflow_webhooks_workflow_idx ON automation_workflow_webhooks (workflow_id, created_at);

-- A run started by a webhook keeps the body it was started with, and
-- which webhook started it.
ALTER TABLE automation_workflow_runs
    ADD COLUMN input      jsonb,
    ADD COLUMN webhook_id text;

-- +goose Down
ALTER TABLE automation_workflow_runs DROP COLUMN webhook_id, DROP COLUMN input;
DROP TABLE automation_workflow_webhooks;
