package patches_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/internal/patches"
)

// A device has one open reboot (asking again answers it, forced if either
// asked so); a finished one keeps its outcome; the agent's answers map to
// states, and an unknown status or an error is failed.
func TestRebootRecordsTheAgentsAnswer(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.device(t, "web-1", "a")
	ask := func(forced bool) patches.Reboot {
		rb, err := f.svc.RequestReboot(t.Context(), patches.RebootRequest{DeviceGUID: "web-1", WhenRequired: true, Forced: forced, Actor: "admin"})
		require.NoError(t, err)
		return rb
	}
	a := ask(false)
	require.Equal(t, patches.RebootQueued, a.State)
	require.Equal(t, proto.PatchRebootRequest{RebootID: a.ID, WhenRequired: true}, a.AgentRequest())
	b := ask(true)
	require.Equal(t, a.ID, b.ID, "asking twice while it is open is the same reboot")
	require.True(t, b.Forced)

	_, run, err := f.svc.BeginReboot(t.Context(), a.ID)
	require.NoError(t, err)
	require.True(t, run)
	got, err := f.svc.ConcludeReboot(t.Context(), a.ID, patches.RebootOutcome{Result: &proto.PatchRebootResult{
		Status: proto.PatchRebootSkippedLoggedIn, Message: "1 user(s) signed in", SignedIn: []string{"alice"}}})
	require.NoError(t, err)
	require.Equal(t, patches.RebootSkipped, got.State)
	require.Equal(t, []string{"alice"}, got.SignedIn)
	_, run, err = f.svc.BeginReboot(t.Context(), a.ID)
	require.NoError(t, err)
	require.False(t, run, "a finished reboot does not run again")
	again, err := f.svc.ConcludeReboot(t.Context(), a.ID, patches.RebootOutcome{Result: &proto.PatchRebootResult{Status: proto.PatchRebootScheduled}})
	require.NoError(t, err)
	require.Equal(t, patches.RebootSkipped, again.State, "a finished reboot keeps its outcome")

	for _, tc := range []struct {
		out  patches.RebootOutcome
		want string
	}{
		{patches.RebootOutcome{Result: &proto.PatchRebootResult{Status: "rebooted_now"}}, patches.RebootFailed},
		{patches.RebootOutcome{ErrCode: proto.CodeOpFailed, ErrMessage: "cannot list the signed-in users"}, patches.RebootFailed},
		{patches.RebootOutcome{Result: &proto.PatchRebootResult{Status: proto.PatchRebootNotRequired}}, patches.RebootNotRequired},
		{patches.RebootOutcome{Result: &proto.PatchRebootResult{Status: proto.PatchRebootScheduled}}, patches.RebootScheduled},
	} {
		rb := ask(false)
		got, err := f.svc.ConcludeReboot(t.Context(), rb.ID, tc.out)
		require.NoError(t, err)
		require.Equal(t, tc.want, got.State, "%+v", tc.out)
	}

	_, err = f.svc.RequestReboot(t.Context(), patches.RebootRequest{DeviceGUID: "web-1"})
	require.True(t, cairn.IsCode(err, cairn.ECodeValidation), "%v", err)
}
