package automation_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/agent/proto"
)

// The language every Windows agent runs without extra software, and one
// it refuses. These tests run as a Windows binary under Wine (make
// test-wine), whose cmd.exe and taskkill.exe stand in for Windows'.
const (
	nativeLanguage  = "cmd"
	foreignLanguage = "sh"
)

func touchScript(path string) string { return "@type nul > \"" + path + "\"" }

func TestRunCmdOutputAndExitCodes(t *testing.T) {
	t.Parallel()
	e := setup(t)
	cases := []struct {
		name, body     string
		exit           int
		stdout, stderr string
	}{
		{"success", "@echo off\r\necho hello\r\necho oops>&2\r\n", 0, "hello\r\n", "oops\r\n"},
		{"non-zero exit", "@echo off\r\necho partial\r\nexit /b 3\r\n", 3, "partial\r\n", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			res, err := e.run(t, nil, proto.ScriptJob{Language: "cmd", Body: c.body})
			require.NoError(t, err)
			require.Equal(t, c.exit, res.ExitCode)
			require.Equal(t, c.stdout, res.Stdout)
			require.Equal(t, c.stderr, res.Stderr)
			require.False(t, res.TimedOut)
		})
	}
}

// Parameters and the run ID arrive as environment variables.
func TestCmdParametersAreEnvironment(t *testing.T) {
	t.Parallel()
	e := setup(t)
	res, err := e.run(t, nil, proto.ScriptJob{Language: "cmd",
		Body:       "@echo off\r\necho %CAIRN_PARAM_GREETING%/%CAIRN_RUN_ID%\r\n",
		Parameters: map[string]string{"greeting": "hi there"}})
	require.NoError(t, err)
	require.Equal(t, "hi there/run-1\r\n", res.Stdout)
}

// A script that never ends is stopped at its timeout (taskkill /T on the
// tree, then the interpreter itself) and the run answers.
func TestCmdTimeoutStopsTheScript(t *testing.T) {
	t.Parallel()
	e := setup(t)
	res, err := e.run(t, nil, proto.ScriptJob{Language: "cmd", TimeoutSeconds: 1,
		Body: "@echo off\r\necho started\r\n:spin\r\ngoto spin\r\n"})
	require.NoError(t, err)
	require.True(t, res.TimedOut)
	require.Equal(t, -1, res.ExitCode)
	require.Equal(t, "started\r\n", res.Stdout)
}
