-- +goose Up
-- Agent capabilities (issue 22 item 5, docs/api.md "Agent capabilities"):
-- what the device's agent said it can do at its last socket connect
-- (agent/proto capabilities.go). NULL: the agent has not connected since
-- the Engine learned capabilities; the Engine then assumes the legacy set
-- (proto.LegacyCapabilities), as it does for agents that report none.
ALTER TABLE devices ADD COLUMN capabilities text[];

-- +goose Down
ALTER TABLE devices DROP COLUMN capabilities;
