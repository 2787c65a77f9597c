package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/agent"
)

// setup writes an enrolled config and returns its path.
func setup(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), agent.FileName)
	c := agent.Default()
	c.ServerURL = "https://engine.example.test"
	c.ServerIPFallback = "192.0.2.10"
	c.EnrollmentCode = "code-1"
	c.Agent.GUID = "guid-1"
	c.AccessToken, c.RefreshToken = "secret-access", "secret-refresh"
	require.NoError(t, agent.Create(path, "install", c))
	return path
}

func runCLI(args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	code = run(args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestMetadataSetGet(t *testing.T) {
	t.Parallel()
	path := setup(t)

	code, out, _ := runCLI("--config", path, "--metadata", "get", "12")
	require.Equal(t, 0, code)
	require.Contains(t, out, "source: none")

	code, out, errOut := runCLI("--config", path, "--metadata", "set", "12", "rack 4, -shelf 2")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "queued field 12")

	code, out, _ = runCLI("--config="+path, "--metadata", "get", "12")
	require.Equal(t, 0, code)
	require.Contains(t, out, "value: rack 4, -shelf 2\n")
	require.Contains(t, out, "source: queued locally")

	code, out, _ = runCLI("--config", path, "--metadata", "set", "12", "")
	require.Equal(t, 0, code)
	require.Contains(t, out, "queued clear of field 12")

	c, err := agent.Load(path)
	require.NoError(t, err)
	require.Len(t, c.PendingMetadata(), 1)
	require.Equal(t, "metadata", c.Agent.State.Writer)
	require.Equal(t, int64(3), c.Agent.State.Revision)
}

func TestStatus(t *testing.T) {
	t.Parallel()
	path := setup(t)
	code, _, _ := runCLI("--config", path, "--metadata", "set", "3", "x")
	require.Equal(t, 0, code)
	code, out, errOut := runCLI("--config", path, "status")
	require.Equal(t, 0, code, errOut)
	for _, want := range []string{
		"server: https://engine.example.test (fallback IP 192.0.2.10)\n",
		"guid: guid-1\n",
		"enrollment: enrolled\n",
		"access token: present\n",
		"refresh token: present\n",
		"queued metadata: 1\n",
		`config revision: 2 (last written by "metadata"`,
	} {
		require.Contains(t, out, want)
	}
	require.NotContains(t, out, "secret", "tokens are never printed")
}

func TestBadInput(t *testing.T) {
	t.Parallel()
	path := setup(t)
	before, err := os.ReadFile(path)
	require.NoError(t, err)
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{nil, 2, "no command given"},
		{[]string{"--config"}, 2, "--config needs a path"},
		{[]string{"--config", path}, 2, "no command given"},
		{[]string{"--config", path, "frobnicate"}, 2, `unknown command "frobnicate"`},
		{[]string{"--config", path, "enroll"}, 2, "enroll needs --server URL and --code CODE"},
		{[]string{"--config", path, "enroll", "--server", "ftp://x", "--code", "c"}, 2, "must be the Engine's http(s) base URL"},
		{[]string{"--config", path, "enroll", "--server", "https://x", "--code", "c", "--server-ip-fallback", "x:1"}, 2, "bare IP"},
		{[]string{"--config", path, "enroll", "--server=", "--code", "c"}, 2, "--server needs a value"},
		{[]string{"--config", path, "enroll", "--server", "https://x", "--code", "c", "--ca-file", filepath.Join(t.TempDir(), "none.pem")}, 1, "--ca-file"},
		{[]string{"--config", path, "enroll", "--server", "https://x", "--code", "c", "--trust-public-cas"}, 2, "--trust-public-cas goes with --ca-file"},
		{[]string{"--config", path, "run", "extra"}, 2, "run takes no arguments"},
		{[]string{"--config", filepath.Join(t.TempDir(), "missing.json"), "run"}, 1, "does not exist"},
		{[]string{"simulate", "--server", "https://x", "--code", "c"}, 2, "--count of at least 1"},
		{[]string{"simulate", "--server", "https://x", "--code", "c", "--count", "2", "--concurrency", "0"}, 2, "--concurrency"},
		{[]string{"simulate", "--count", "2"}, 2, "simulate needs --server"},
		{[]string{"--config", path, "status", "extra"}, 2, "status takes no arguments"},
		{[]string{"--config", path, "--metadata"}, 2, "needs get or set"},
		{[]string{"--config", path, "--metadata", "del", "1"}, 2, "unknown --metadata action"},
		{[]string{"--config", path, "--metadata", "get"}, 2, "exactly one field number"},
		{[]string{"--config", path, "--metadata", "get", "0"}, 2, "between 1 and 500"},
		{[]string{"--config", path, "--metadata", "get", "abc"}, 2, "not a number"},
		{[]string{"--config", path, "--metadata", "set", "501", "x"}, 2, "between 1 and 500"},
		{[]string{"--config", path, "--metadata", "set", "5"}, 2, "a field number and one value"},
		{[]string{"--config", path, "--metadata", "set", "5", "a", "b"}, 2, "a field number and one value"},
		{[]string{"--config", path, "--metadata", "set", "5", strings.Repeat("a", 1025)}, 2, "at most 1024"},
		{[]string{"--config", filepath.Join(t.TempDir(), "missing.json"), "status"}, 1, "does not exist"},
		{[]string{"--config", filepath.Join(t.TempDir(), "missing.json"), "--metadata", "set", "5", "x"}, 1, "does not exist"},
	} {
		code, _, errOut := runCLI(tc.args...)
		require.Equal(t, tc.code, code, "%q: %s", tc.args, errOut)
		require.Contains(t, errOut, tc.want, "%q", tc.args)
	}
	after, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, before, after, "bad input never writes")
}

func TestRefusesNewerSchema(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), agent.FileName)
	require.NoError(t, os.WriteFile(path, []byte(`{"schema_version": 99}`), 0o600))
	code, _, errOut := runCLI("--config", path, "status")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "newer agent")
	code, _, errOut = runCLI("--config", path, "--metadata", "set", "1", "x")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "newer agent")
}

func TestHelp(t *testing.T) {
	t.Parallel()
	code, out, _ := runCLI("--help")
	require.Equal(t, 0, code)
	require.Contains(t, out, "--metadata set <field> <value>")
}

// generalize clears the identity and keeps what a new machine needs to
// enroll on its own.
func TestGeneralize(t *testing.T) {
	t.Parallel()
	path := setup(t)
	_, err := agent.Update(path, "test", func(c *agent.Config) error {
		_, err := c.EnsureKey()
		c.Agent.AgentID = "agt_1"
		c.CloneTicket = "clt_x"
		return err
	})
	require.NoError(t, err)
	code, out, errOut := runCLI("--config", path, "generalize")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "identity cleared")
	c, err := agent.Load(path)
	require.NoError(t, err)
	require.Empty(t, c.Ed25519PrivateKey)
	require.Empty(t, c.Agent.GUID)
	require.Empty(t, c.Agent.AgentID)
	require.Empty(t, c.AccessToken)
	require.Empty(t, c.RefreshToken)
	require.Empty(t, c.CloneTicket)
	require.Equal(t, "https://engine.example.test", c.ServerURL)
	require.Equal(t, "192.0.2.10", c.ServerIPFallback)
	require.Equal(t, "code-1", c.EnrollmentCode)
	require.True(t, c.CanEnroll())
	require.True(t, c.Generalized)

	code, _, _ = runCLI("--config", path, "generalize", "extra")
	require.Equal(t, 2, code)
}
