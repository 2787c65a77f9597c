//go:build linux

package automation_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/agent/automation"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/internal/testdir"
)

// These run Debian's ansible package (scripts/deps.sh test installs it).

func writePlaybook(path string) string {
	return `- hosts: localhost
  gather_facts: false
  tasks:
    - name: write the greeting
      ansible.builtin.copy:
        dest: ` + path + `
        content: "{{ greeting }}\n"
`
}

// A playbook runs against localhost: the first run changes the file, the
// second finds it as it should be; its parameter is an extra var; the
// recap is parsed; the output is posted while it runs; nothing of the
// run is left in the agent's temporary directory.
func TestPlaybookRunsLocally(t *testing.T) {
	t.Parallel()
	e := setup(t)
	target := filepath.Join(testdir.New(t), "greeting.txt")
	c := &caller{}
	job := proto.ScriptJob{Language: proto.LangAnsible, Body: writePlaybook(target),
		Parameters: map[string]string{"greeting": "hello $(touch /nonexistent)"}}
	res, err := e.run(t, c, job)
	require.NoError(t, err)
	require.Equal(t, 0, res.ExitCode, res.Stdout+res.Stderr)
	require.NotNil(t, res.Ansible, res.Stdout)
	require.Equal(t, 1, res.Ansible.Changed)
	require.Equal(t, 1, res.Ansible.Ok)
	require.Zero(t, res.Ansible.Failed)
	require.NotEmpty(t, res.Ansible.Version)
	require.Contains(t, res.Stdout, "PLAY RECAP")
	got, err := os.ReadFile(target)
	require.NoError(t, err)
	require.Equal(t, "hello $(touch /nonexistent)\n", string(got))
	require.NotEmpty(t, c.all(), "the output is posted")
	require.Contains(t, c.all()[len(c.all())-1].Stdout, "changed: [localhost]")

	res, err = e.run(t, nil, job)
	require.NoError(t, err)
	require.Equal(t, 0, res.ExitCode)
	require.Equal(t, &proto.AnsibleRecap{Version: res.Ansible.Version, Ok: 1}, res.Ansible)

	left, err := os.ReadDir(e.tempDir)
	require.NoError(t, err)
	require.Empty(t, left, "the run's files are removed")
}

// A failed task fails the run with ansible-playbook's exit code and the
// recap counting it.
func TestPlaybookFailure(t *testing.T) {
	t.Parallel()
	e := setup(t)
	res, err := e.run(t, nil, proto.ScriptJob{Language: proto.LangAnsible, Body: `- hosts: all
  gather_facts: false
  tasks:
    - ansible.builtin.debug: {msg: before}
    - ansible.builtin.fail: {msg: on purpose}
`})
	require.NoError(t, err)
	require.Equal(t, 2, res.ExitCode, res.Stdout)
	require.Equal(t, 1, res.Ansible.Failed)
	require.Equal(t, 1, res.Ansible.Ok)
	require.Contains(t, res.Stdout, "on purpose")
}

// The timeout kills the playbook's process group.
func TestPlaybookTimeout(t *testing.T) {
	t.Parallel()
	e := setup(t)
	res, err := e.run(t, nil, proto.ScriptJob{Language: proto.LangAnsible, TimeoutSeconds: 3, Body: `- hosts: localhost
  gather_facts: false
  tasks:
    - ansible.builtin.command: sleep 300
`})
	require.NoError(t, err)
	require.True(t, res.TimedOut)
	require.Equal(t, -1, res.ExitCode)
	require.Nil(t, res.Ansible)
}

// A playbook whose signed payload was altered runs nothing.
func TestPlaybookTamperedIsRefused(t *testing.T) {
	t.Parallel()
	e := setup(t)
	target := filepath.Join(testdir.New(t), "tampered.txt")
	raw := e.payload(t, proto.ScriptJob{Language: proto.LangAnsible, Body: writePlaybook(filepath.Join(testdir.New(t), "signed.txt")),
		Parameters: map[string]string{"greeting": "x"}})
	var sg proto.Signed
	require.NoError(t, json.Unmarshal(raw, &sg))
	var job proto.ScriptJob
	require.NoError(t, json.Unmarshal(sg.Payload, &job))
	job.Body = writePlaybook(target)
	sg.Payload, _ = json.Marshal(job)
	tampered, _ := json.Marshal(sg)
	_, err := e.handler(context.Background(), nil, tampered)
	require.Equal(t, proto.CodeSignatureInvalid, code(t, err))
	require.NoFileExists(t, target)
}

// An agent without a usable ansible-playbook answers ansible_unavailable.
func TestAnsibleUnavailable(t *testing.T) {
	t.Parallel()
	empty := testdir.New(t)
	old := testdir.New(t)
	require.NoError(t, os.WriteFile(filepath.Join(old, automation.AnsibleBinary),
		[]byte("#!/bin/sh\necho 'ansible-playbook 2.9.27'\n"), 0o755))
	for name, path := range map[string]string{"missing": empty, "too old": old} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := setupWith(t, func(o *automation.Options) { o.Path = path })
			_, err := e.run(t, nil, proto.ScriptJob{Language: proto.LangAnsible, Body: "- hosts: localhost\n  tasks: []\n"})
			require.Equal(t, proto.CodeAnsibleUnavailable, code(t, err))
		})
	}
}

func TestParseRecap(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, out string
		want      *proto.AnsibleRecap
	}{
		{"none", "ERROR! the playbook could not be parsed\n", nil},
		{"one host", "PLAY RECAP ****\nlocalhost                  : ok=3    changed=1    unreachable=0    failed=1    skipped=2    rescued=0    ignored=4   \n",
			&proto.AnsibleRecap{Ok: 3, Changed: 1, Failed: 1, Skipped: 2, Ignored: 4}},
		{"old format", "PLAY RECAP\nlocalhost : ok=2 changed=0 unreachable=1 failed=0\n\nsome trailer\n",
			&proto.AnsibleRecap{Ok: 2, Unreachable: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, automation.ParseRecap(tc.out))
		})
	}
	require.Nil(t, automation.ParseRecap(strings.Repeat("x", 10)))
}
