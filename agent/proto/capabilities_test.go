package proto

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestReportedCapabilities(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		hello string
		want  []Capability
	}{
		// Agents before protocol 4 send no set: the legacy one, whatever
		// they send.
		{"protocol 2", `{"guid":"g","protocol":2}`, LegacyCapabilities()},
		{"protocol 3", `{"guid":"g","protocol":3,"capabilities":["registry"]}`, LegacyCapabilities()},
		{"protocol 4 set", `{"guid":"g","protocol":4,"capabilities":["shell","files"]}`, []Capability{CapShell, CapFiles}},
		{"protocol 4 none", `{"guid":"g","protocol":4}`, []Capability{}},
		{"protocol 4 empty", `{"guid":"g","protocol":4,"capabilities":[]}`, []Capability{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var hello ConnectAgent
			require.NoError(t, json.Unmarshal([]byte(tc.hello), &hello))
			require.Equal(t, tc.want, hello.ReportedCapabilities())
		})
	}
}

func TestAgentCapabilities(t *testing.T) {
	t.Parallel()
	require.Contains(t, AgentCapabilities("windows"), CapPatchInstall, "installs through the Windows Update Agent")
	require.Contains(t, AgentCapabilities("windows"), CapVNC, "the agent's own RFB server (agent/vnc/rfbserver)")
	require.Contains(t, AgentCapabilities("linux"), CapVNC, "x11vnc")
	require.NotContains(t, AgentCapabilities("darwin"), CapVNC)
	require.NotContains(t, AgentCapabilities("windows"), CapAnsible, "playbooks run on Linux agents")
	require.Contains(t, AgentCapabilities("windows"), CapRDP, "the Windows RDP role (behaviour 14): TermService")
	require.Len(t, AgentCapabilities("windows"), len(AllCapabilities)-1)
	require.Contains(t, AgentCapabilities("linux"), CapRDP)
	require.Contains(t, AgentCapabilities("linux"), CapAnsible)
	require.Contains(t, HandlerCapabilities([]string{EventQuickJobRun}), CapAnsible, "the script runner runs playbooks")
	require.NotContains(t, AgentCapabilities("linux"), CapRegistry)
	require.Contains(t, AgentCapabilities("linux"), CapPatchInstall)
	require.NotContains(t, AgentCapabilities("linux"), CapPatchEnforcement, "Windows Update policy exists only on Windows")
	require.Contains(t, AgentCapabilities("windows"), CapPatchEnforcement)
	require.Len(t, AgentCapabilities("linux"), len(AllCapabilities)-2)
	for _, c := range AllCapabilities {
		require.Contains(t, CapabilityVersion, c, "every capability names its protocol")
		require.LessOrEqual(t, CapabilityVersion[c], Version)
	}
	for _, c := range LegacyCapabilities() {
		require.Less(t, CapabilityVersion[c], CapabilitiesVersion, "a legacy capability is known before protocol 4")
	}
}
