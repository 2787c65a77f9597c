-- name: ListenEvents :exec
LISTEN cairn_events;

-- name: ListenControl :exec
LISTEN cairn_control;

-- name: ListenAgents :exec
LISTEN cairn_agents;
