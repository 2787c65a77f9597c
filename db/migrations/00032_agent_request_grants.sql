-- +goose Up
-- A command-path request's grant (issue 21 items 1 and 4): the Engine's
-- signature over exactly this request to this device, which the agent
-- checks before any handler runs (agent/proto/grant.go). A row without one
-- (or planted with a forged one) is refused by the agent.
ALTER TABLE agent_requests ADD COLUMN grant_signed jsonb;

-- +goose Down
ALTER TABLE agent_requests DROP COLUMN grant_signed;
