package devices

import (
	"strings"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/agent/proto"
)

// Agent capabilities (docs/api.md "Agent capabilities"): what a device's
// agent said at its last socket connect it can be asked to do. A route
// checks the capability its request needs before any workflow starts, so
// an agent that cannot answer is never asked.

// AgentCapabilities is a device's capability set as the Engine knows it.
type AgentCapabilities struct {
	// Set is what the agent reported, or proto.LegacyCapabilities when it
	// reported none (an agent before protocol 4, or none connected since
	// the Engine learned capabilities).
	Set []proto.Capability
	// Reported says the agent reported Set itself.
	Reported bool
}

// CapabilitiesFrom reads the devices.capabilities column (NULL: none
// reported).
func CapabilitiesFrom(column []string) AgentCapabilities {
	if column == nil {
		return AgentCapabilities{Set: proto.LegacyCapabilities()}
	}
	set := make([]proto.Capability, len(column))
	for i, c := range column {
		set[i] = proto.Capability(c)
	}
	return AgentCapabilities{Set: set, Reported: true}
}

// Names is the set as strings (the API's capabilities field).
func (a AgentCapabilities) Names() []string {
	out := make([]string, len(a.Set))
	for i, c := range a.Set {
		out[i] = string(c)
	}
	return out
}

// Require answers nil when the agent of hostname has c. Otherwise: an
// agent that reported its set without a capability only some platforms
// have (the registry editor) is on another platform, 422
// unsupported_platform; any other lack is 409 agent_too_old naming c and
// the agent protocol that has it. (A *cairn.Error, nil when c is there:
// compare it with nil before storing it in an error.)
func (a AgentCapabilities) Require(hostname string, c proto.Capability) *cairn.Error {
	if proto.HasCapability(a.Set, c) {
		return nil
	}
	since := proto.CapabilityVersion[c]
	if since == 0 {
		since = proto.Version
	}
	if platform, only := proto.CapabilityPlatform[c]; only && a.Reported {
		return cairn.Errorf(proto.CodeUnsupportedPlatform,
			"the agent of %s does not offer the %q capability: only %s agents have it", hostname, c, strings.Join(platform, " and "))
	}
	if !a.Reported {
		return cairn.Errorf(cairn.ECodeAgentTooOld,
			"the agent of %s is too old for %q: it reported no capabilities (an agent before protocol %d) and %q needs an agent of protocol %d or later; update the agent",
			hostname, c, proto.CapabilitiesVersion, c, since)
	}
	return cairn.Errorf(cairn.ECodeAgentTooOld,
		"the agent of %s does not report the %q capability, which agents of protocol %d and later have; update the agent",
		hostname, c, since)
}
