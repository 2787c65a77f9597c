package operations

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/agent/inventory"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/agent/roles"
	"github.com/cairn-rmm/cairn/agent/runtime"
)

// These tests drive the registered handlers against this machine: real
// processes the test starts, real init scripts in a temporary InitDir,
// the real package manager.

// wait bounds the conditions a test waits for; tick is how often they are
// looked at.
const (
	wait = 30 * time.Second
	tick = 10 * time.Millisecond
)

type env struct {
	h       *runtime.Handlers
	initDir string
}

func setup(t *testing.T, opts Options) env {
	t.Helper()
	dir := t.TempDir()
	opts.Inventory = inventory.New(roles.New(nil), inventory.Options{InitDir: dir, InitScripts: true})
	h := runtime.NewHandlers()
	require.NoError(t, Register(h, opts))
	return env{h: h, initDir: dir}
}

// call runs the handler of typ with req as its payload and decodes the
// result into out; it returns the operation error, if any.
func (e env) call(t *testing.T, typ string, req, out any) *proto.Error {
	t.Helper()
	payload, err := json.Marshal(req)
	require.NoError(t, err)
	fn := e.h.Lookup(typ)
	require.NotNil(t, fn, typ)
	res, err := fn(t.Context(), nil, payload)
	if err != nil {
		var pe *proto.Error
		require.True(t, errors.As(err, &pe), "operations answer with a *proto.Error, got %T: %v", err, err)
		return pe
	}
	raw, err := json.Marshal(res)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(raw, out))
	return nil
}

// child starts a process and reaps it when the test ends.
func child(t *testing.T, name string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(name, args...)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return cmd
}

// signalOf reaps cmd and returns the signal that ended it.
func signalOf(t *testing.T, cmd *exec.Cmd) syscall.Signal {
	t.Helper()
	err := cmd.Wait()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit)
	ws := exit.Sys().(syscall.WaitStatus)
	require.True(t, ws.Signaled(), "ended by a signal: %v", err)
	return ws.Signal()
}

func TestListProcesses(t *testing.T) {
	t.Parallel()
	e := setup(t, Options{})
	before := time.Now()
	var snap proto.ProcessSnapshot
	require.Nil(t, e.call(t, proto.EventProcessManagement, proto.ProcessRequest{Action: proto.ProcessList}, &snap))
	require.False(t, snap.CapturedAt.Before(before.Truncate(time.Second)), "captured now, not cached")
	require.True(t, slices.ContainsFunc(snap.Processes, func(p proto.Process) bool { return p.PID == os.Getpid() }),
		"the test's own process is listed")
}

func TestTerminate(t *testing.T) {
	t.Parallel()
	e := setup(t, Options{})
	cmd := child(t, "sleep", "3600")
	var res proto.ProcessTerminated
	require.Nil(t, e.call(t, proto.EventProcessManagement,
		proto.ProcessRequest{Action: proto.ProcessTerminate, PID: cmd.Process.Pid, Name: "sleep"}, &res))
	require.Equal(t, proto.ProcessTerminated{PID: cmd.Process.Pid, Name: "sleep", Terminated: true, Signal: "SIGTERM"}, res,
		"answered while the child is an unreaped zombie: gone counts")
	require.Equal(t, syscall.SIGTERM, signalOf(t, cmd))
}

func TestTerminateEscalatesToSIGKILL(t *testing.T) {
	t.Parallel()
	e := setup(t, Options{Grace: 100 * time.Millisecond})
	// An ignored signal stays ignored across exec: this sleep shrugs off
	// SIGTERM.
	cmd := child(t, "sh", "-c", `trap "" TERM; exec sleep 3600`)
	comm := "/proc/" + strconv.Itoa(cmd.Process.Pid) + "/comm"
	require.Eventually(t, func() bool {
		b, _ := os.ReadFile(comm)
		return strings.TrimSpace(string(b)) == "sleep"
	}, wait, tick, "the shell set the trap and became sleep")
	var res proto.ProcessTerminated
	require.Nil(t, e.call(t, proto.EventProcessManagement,
		proto.ProcessRequest{Action: proto.ProcessTerminate, PID: cmd.Process.Pid, Name: "sleep"}, &res))
	require.Equal(t, "SIGKILL", res.Signal)
	require.True(t, res.Terminated)
	require.Equal(t, syscall.SIGKILL, signalOf(t, cmd))
}

func TestTerminateRefusals(t *testing.T) {
	t.Parallel()
	e := setup(t, Options{})
	sleeper := child(t, "sleep", "3600")
	for _, tc := range []struct {
		name    string
		payload any
		code    string
	}{
		{"name mismatch", proto.ProcessRequest{Action: proto.ProcessTerminate, PID: sleeper.Process.Pid, Name: "bash"}, proto.CodeOpMismatch},
		// Above PID_MAX_LIMIT (2^22): no process can have it.
		{"not found", proto.ProcessRequest{Action: proto.ProcessTerminate, PID: 1<<22 + 1, Name: "sleep"}, proto.CodeOpNotFound},
		{"init", proto.ProcessRequest{Action: proto.ProcessTerminate, PID: 1, Name: "init"}, proto.CodeOpInvalid},
		{"the agent", proto.ProcessRequest{Action: proto.ProcessTerminate, PID: os.Getpid(), Name: "ops.test"}, proto.CodeOpInvalid},
		{"no pid", proto.ProcessRequest{Action: proto.ProcessTerminate, Name: "sleep"}, proto.CodeOpInvalid},
		{"no name", proto.ProcessRequest{Action: proto.ProcessTerminate, PID: sleeper.Process.Pid}, proto.CodeOpInvalid},
		{"unknown action", proto.ProcessRequest{Action: "suspend", PID: sleeper.Process.Pid, Name: "sleep"}, proto.CodeOpInvalid},
		{"malformed", map[string]any{"action": 7}, proto.CodeOpInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pe := e.call(t, proto.EventProcessManagement, tc.payload, nil)
			require.NotNil(t, pe)
			require.Equal(t, tc.code, pe.Code, pe.Message)
		})
	}
	require.NoError(t, sleeper.Process.Signal(syscall.Signal(0)), "the mismatched process was left alone")
}

func TestRefreshSoftwareAndPatches(t *testing.T) {
	t.Parallel()
	_, err := exec.LookPath("dpkg-query")
	require.NoError(t, err, "the project's machines are Debian")
	e := setup(t, Options{})
	var sw proto.SoftwareRefreshResult
	require.Nil(t, e.call(t, proto.EventSoftwareRefresh, struct{}{}, &sw))
	require.True(t, slices.ContainsFunc(sw.Software, func(s proto.Software) bool { return s.Name == "dpkg" }))
	require.False(t, sw.CollectedAt.IsZero())

	var patches proto.PatchRefreshResult
	require.Nil(t, e.call(t, proto.EventPatchRefresh, struct{}{}, &patches))
	require.NotNil(t, patches.Patches, "collected (an up-to-date machine has an empty list, not none)")
	require.NotNil(t, patches.Status, "the scan's status comes with the rows")
	require.Equal(t, proto.PatchProviderApt, patches.Status.Provider)
	for _, p := range patches.Patches {
		if p.State == proto.PatchInstalled {
			// apt's history log: an upgrade it recorded.
			require.Equal(t, proto.PatchSourceAptHistory, p.Source)
			require.NotEmpty(t, p.InstalledVersion, p.Package)
			continue
		}
		require.Equal(t, inventory.SourceApt, p.Source)
		require.NotEmpty(t, p.CandidateVersion, p.Package)
	}
}

// Register refuses a second registration and a missing inventory.
func TestRegister(t *testing.T) {
	t.Parallel()
	h := runtime.NewHandlers()
	require.Error(t, Register(h, Options{}))
	inv := inventory.New(roles.New(nil), inventory.Options{})
	require.NoError(t, Register(h, Options{Inventory: inv}))
	require.Error(t, Register(h, Options{Inventory: inv}), "the event types are taken")
}
