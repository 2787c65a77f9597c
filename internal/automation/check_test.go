package automation

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn"
)

func TestRunsOn(t *testing.T) {
	t.Parallel()
	cases := []struct {
		lang, os string
		ok       bool
	}{
		{"bash", "Debian GNU/Linux 12", true},
		{"python", "", true},
		{"sh", "Microsoft Windows Server 2022", false},
		{"powershell", "Microsoft Windows 11 Pro", true},
		{"cmd", "Debian GNU/Linux 12", false},
		{"powershell", "", false},
		{"perl", "Debian GNU/Linux 12", false},
		// Playbooks: ansible-playbook has no Windows build.
		{"ansible", "Debian GNU/Linux 12", true},
		{"ansible", "", true},
		{"ansible", "Microsoft Windows Server 2022", false},
	}
	for _, c := range cases {
		require.Equal(t, c.ok, runsOn(c.lang, c.os), "%s on %q", c.lang, c.os)
	}
}

// Parameters become environment text; an assembly's declared parameters
// decide types, defaults and which names exist.
func TestCheckRunParameters(t *testing.T) {
	t.Parallel()
	declared := []Parameter{
		{Name: "count", Type: "number", Default: float64(3)},
		{Name: "force", Type: "boolean"},
		{Name: "target", Type: "string", Required: true},
	}
	id := int64(1)
	spec := RunSpec{AssemblyID: &id, TimeoutSeconds: 60, Parameters: map[string]any{"target": "/srv", "force": true}}
	got, err := checkRun(spec, declared)
	require.NoError(t, err)
	require.Equal(t, map[string]string{"count": "3", "force": "true", "target": "/srv"}, got)

	spec.Parameters = map[string]any{"force": "yes", "extra": "x", "count": 2.5}
	_, err = checkRun(spec, declared)
	var ce *cairn.Error
	require.ErrorAs(t, err, &ce)
	require.Contains(t, ce.Fields, "parameters.force")
	require.Contains(t, ce.Fields, "parameters.extra")
	require.Contains(t, ce.Fields, "parameters.target")
	require.NotContains(t, ce.Fields, "parameters.count")

	adhoc := RunSpec{Language: "sh", Body: "env", TimeoutSeconds: 60, Parameters: map[string]any{"n": float64(10), "b": false, "s": "x y"}}
	got, err = checkRun(adhoc, nil)
	require.NoError(t, err)
	require.Equal(t, map[string]string{"n": "10", "b": "false", "s": "x y"}, got)
}

// A playbook assembly's body is plays for the device itself.
func TestCheckPlaybook(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, body string
		ok         bool
	}{
		{"localhost", "- hosts: localhost\n  tasks: []\n", true},
		{"all, local, two plays", "- hosts: all\n  connection: local\n  tasks: []\n- hosts: 127.0.0.1\n  roles: []\n", true},
		{"blank", "  \n", false},
		{"a scalar", "echo hi", false},
		{"a mapping", "hosts: localhost\n", false},
		{"empty list", "[]", false},
		{"a group", "- hosts: webservers\n", false},
		{"hosts list", "- hosts: [localhost, db]\n", false},
		{"ssh", "- hosts: localhost\n  connection: ssh\n", false},
		{"import", "- import_playbook: site.yml\n", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			msg := checkPlaybook(c.body)
			require.Equal(t, c.ok, msg == "", msg)
		})
	}
}
