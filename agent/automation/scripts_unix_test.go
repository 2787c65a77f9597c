//go:build unix

package automation_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/agent/proto"
)

// The language every Unix agent runs, and one it refuses.
const (
	nativeLanguage  = "sh"
	foreignLanguage = "powershell"
)

func touchScript(path string) string { return "touch " + path }

func TestRunOutputAndExitCodes(t *testing.T) {
	t.Parallel()
	e := setup(t)
	cases := []struct {
		name, lang, body string
		exit             int
		stdout, stderr   string
	}{
		{"success", "sh", "echo hello; echo oops >&2", 0, "hello\n", "oops\n"},
		{"non-zero exit", "sh", "echo partial; exit 3", 3, "partial\n", ""},
		{"bash", "bash", "x=(a b c); echo ${#x[@]}", 0, "3\n", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			res, err := e.run(t, nil, proto.ScriptJob{Language: c.lang, Body: c.body})
			require.NoError(t, err)
			require.Equal(t, c.exit, res.ExitCode)
			require.Equal(t, c.stdout, res.Stdout)
			require.Equal(t, c.stderr, res.Stderr)
			require.False(t, res.TimedOut)
			require.False(t, res.FinishedAt.Before(res.StartedAt))
		})
	}
}

// Parameters arrive as environment variables; a value full of shell
// syntax stays data.
func TestParametersAreEnvironment(t *testing.T) {
	t.Parallel()
	e := setup(t)
	marker := filepath.Join(t.TempDir(), "pwned")
	res, err := e.run(t, nil, proto.ScriptJob{Language: "sh", Body: `printf '%s|%s' "$CAIRN_PARAM_GREETING" "$CAIRN_PARAM_EVIL"`,
		Parameters: map[string]string{"greeting": "hi there", "evil": "$(touch " + marker + ")"}})
	require.NoError(t, err)
	require.Equal(t, "hi there|$(touch "+marker+")", res.Stdout)
	require.NoFileExists(t, marker)
}

// A timeout kills the whole process group: a background child that
// would outlive the shell dies too.
func TestTimeoutKillsTheProcessGroup(t *testing.T) {
	t.Parallel()
	e := setup(t)
	pidFile := filepath.Join(t.TempDir(), "child.pid")
	res, err := e.run(t, nil, proto.ScriptJob{Language: "sh", TimeoutSeconds: 1,
		Body: "sleep 300 & echo $! > " + pidFile + "; echo started; wait"})
	require.NoError(t, err)
	require.True(t, res.TimedOut)
	require.Equal(t, -1, res.ExitCode)
	require.Equal(t, "started\n", res.Stdout)
	raw, err := os.ReadFile(pidFile)
	require.NoError(t, err)
	var pid int
	_, err = fmtSscan(strings.TrimSpace(string(raw)), &pid)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return syscall.Kill(pid, 0) != nil }, 30*time.Second, 50*time.Millisecond,
		"the background child was killed with the group")
}

// Output beyond 1 MiB is cut and marked; the full bounded output goes to
// the output route and the reply carries a bounded copy.
func TestOutputIsBoundedAndPosted(t *testing.T) {
	t.Parallel()
	e := setup(t)
	c := &caller{}
	res, err := e.run(t, c, proto.ScriptJob{Language: "sh", Body: "head -c 3000000 /dev/zero | tr '\\0' 'x'; echo done >&2"})
	require.NoError(t, err)
	require.Equal(t, 0, res.ExitCode)
	require.True(t, res.StdoutTruncated)
	require.Equal(t, proto.MaxReplyOutput, len(res.Stdout))
	require.Equal(t, "done\n", res.Stderr)
	require.False(t, res.StderrTruncated)
	posts := c.all()
	require.NotEmpty(t, posts)
	last := posts[len(posts)-1]
	require.Equal(t, proto.MaxScriptOutput, len(last.Stdout))
	require.True(t, last.StdoutTruncated)
	require.Equal(t, "done\n", last.Stderr)
}

// While a script runs, its output so far is posted.
func TestLiveOutput(t *testing.T) {
	t.Parallel()
	e := setup(t)
	c := &caller{}
	gate := filepath.Join(t.TempDir(), "gate")
	done := make(chan proto.ScriptResult, 1)
	go func() {
		res, err := e.run(t, c, proto.ScriptJob{Language: "sh", Body: "echo first; while [ ! -f " + gate + " ]; do sleep 0.05; done; echo second"})
		if err == nil {
			done <- res
		}
		close(done)
	}()
	require.Eventually(t, func() bool {
		for _, p := range c.all() {
			if p.Stdout == "first\n" {
				return true
			}
		}
		return false
	}, 30*time.Second, 20*time.Millisecond, "the first line is posted while the script still runs")
	require.NoError(t, os.WriteFile(gate, nil, 0o600))
	res, ok := <-done
	require.True(t, ok)
	require.Equal(t, "first\nsecond\n", res.Stdout)
}

func fmtSscan(s string, v *int) (int, error) { return fmt.Sscan(s, v) }
