package service

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestRenderUnit(t *testing.T) {
	t.Parallel()
	unit, err := RenderUnit(UnitOptions{Binary: DefaultBinaryPath, ConfigPath: "/etc/cairn-agent/agent.json"})
	require.NoError(t, err)
	lines := strings.Split(unit, "\n")
	for _, want := range []string{
		"[Unit]",
		"Wants=network-online.target",
		"After=network-online.target",
		"StartLimitIntervalSec=0",
		"[Service]",
		"Type=simple",
		"ExecStart=/usr/local/bin/cairn-agent run --config /etc/cairn-agent/agent.json",
		"Restart=always",
		"RestartSec=5",
		"[Install]",
		"WantedBy=multi-user.target",
	} {
		require.Contains(t, lines, want)
	}
	// A root management agent must keep its reach over the host.
	for _, never := range []string{"ProtectSystem", "ProtectHome", "PrivateTmp", "NoNewPrivileges=yes", "CapabilityBoundingSet", "SystemCallFilter", "User="} {
		for _, l := range lines {
			require.False(t, strings.HasPrefix(l, never), "unit sets %s", l)
		}
	}
	require.True(t, strings.HasSuffix(unit, "\n"))
}

func TestExecStartQuoting(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		binary, config, hostname string
		want                     string
		err                      string
	}{
		{binary: "/usr/bin/cairn-agent", config: "/etc/c/agent.json", hostname: "web-01.example_lab",
			want: `ExecStart=/usr/bin/cairn-agent run --config /etc/c/agent.json --hostname web-01.example_lab`},
		{binary: "/usr/bin/cairn-agent", config: "/etc/c/agent.json", hostname: "web 01; rm", err: "only letters, digits"},
		{binary: "/opt/cairn agent/cairn-agent", config: "/etc/c/agent.json",
			want: `ExecStart="/opt/cairn agent/cairn-agent" run --config /etc/c/agent.json`},
		{binary: "/usr/bin/cairn-agent", config: "/etc/100%/$HOME/agent.json",
			want: `ExecStart=/usr/bin/cairn-agent run --config /etc/100%%/$$HOME/agent.json`},
		{binary: `/opt/a"b\c;d/cairn-agent`, config: "/etc/c/agent.json",
			want: `ExecStart="/opt/a\"b\\c;d/cairn-agent" run --config /etc/c/agent.json`},
		{binary: "cairn-agent", config: "/etc/c/agent.json", err: "binary: \"cairn-agent\" is not an absolute path"},
		{binary: "/usr/bin/cairn-agent", config: "agent.json", err: "config: \"agent.json\" is not an absolute path"},
		{binary: "/usr/bin/cairn-agent", config: "/etc/c/agent.json\nExecStartPre=/bin/evil", err: "control character"},
	} {
		unit, err := RenderUnit(UnitOptions{Binary: tc.binary, ConfigPath: tc.config, Hostname: tc.hostname})
		if tc.err != "" {
			require.ErrorContains(t, err, tc.err)
			continue
		}
		require.NoError(t, err)
		require.Contains(t, strings.Split(unit, "\n"), tc.want)
	}
}
