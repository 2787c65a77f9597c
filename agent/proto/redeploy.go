package proto

// EventAgentRedeploy asks a connected agent to redeploy itself with a new
// enrollment code (SPEC agent behaviour 16; docs/agent.md "Redeploy"):
// it records the code, clears its cached tokens and remote-ops route,
// answers, and enrolls again with the code (same key, same device).
const EventAgentRedeploy = "agent_redeploy_request"

// AgentRedeployRequest is the payload of EventAgentRedeploy. The code is
// a one-time enrollment code for this device; the request carries the
// Engine's grant like every operation.
type AgentRedeployRequest struct {
	EnrollmentCode string `json:"enrollment_code"`
}

// AgentRedeployAccepted answers EventAgentRedeploy: the code is saved and
// the agent is about to enroll with it.
type AgentRedeployAccepted struct {
	Accepted bool `json:"accepted"`
}
