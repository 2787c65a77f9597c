package ops_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/agent/patches/ops"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/agent/runtime"
)

// fakeRebooter records the reboots it was asked to schedule.
type fakeRebooter struct {
	mu       sync.Mutex
	messages []string
	err      error
}

func (f *fakeRebooter) ScheduleReboot(_ context.Context, message string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return f.err
	}
	f.messages = append(f.messages, message)
	return nil
}

// The patch_reboot_request decision table: "when required" of a machine
// that needs none is not_required; a signed-in user skips it with
// skipped_logged_in_user unless forced; otherwise the reboot is
// scheduled; not knowing who is signed in or a failing shutdown is an
// error, never a reboot reported as scheduled.
func TestPatchRebootDecisions(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		req        proto.PatchRebootRequest
		users      []string
		usersErr   error
		required   bool
		rebootErr  error
		want       proto.PatchRebootResult
		wantCode   string
		wantReboot bool
	}{
		{name: "nobody signed in", req: proto.PatchRebootRequest{RebootID: "r"},
			want: proto.PatchRebootResult{Status: proto.PatchRebootScheduled, Message: "reboot scheduled in 1 minute"}, wantReboot: true},
		{name: "user signed in", req: proto.PatchRebootRequest{RebootID: "r"}, users: []string{"alice", "bob"},
			want: proto.PatchRebootResult{Status: proto.PatchRebootSkippedLoggedIn, SignedIn: []string{"alice", "bob"}, Message: "2 user(s) signed in"}},
		{name: "user signed in, forced", req: proto.PatchRebootRequest{RebootID: "r", Forced: true}, users: []string{"alice"},
			want: proto.PatchRebootResult{Status: proto.PatchRebootScheduled, SignedIn: []string{"alice"}, Message: "reboot scheduled in 1 minute"}, wantReboot: true},
		{name: "when required, not required", req: proto.PatchRebootRequest{RebootID: "r", WhenRequired: true, Forced: true}, users: []string{"alice"},
			want: proto.PatchRebootResult{Status: proto.PatchRebootNotRequired, Message: "no reboot is required"}},
		{name: "when required, required, user signed in", req: proto.PatchRebootRequest{RebootID: "r", WhenRequired: true}, required: true, users: []string{"alice"},
			want: proto.PatchRebootResult{Status: proto.PatchRebootSkippedLoggedIn, SignedIn: []string{"alice"}, Message: "1 user(s) signed in"}},
		{name: "when required, required, nobody", req: proto.PatchRebootRequest{RebootID: "r", WhenRequired: true}, required: true,
			want: proto.PatchRebootResult{Status: proto.PatchRebootScheduled, Message: "reboot scheduled in 1 minute"}, wantReboot: true},
		{name: "sessions unknown", req: proto.PatchRebootRequest{RebootID: "r"}, usersErr: errors.New("no logind"), wantCode: proto.CodeOpFailed},
		{name: "shutdown fails", req: proto.PatchRebootRequest{RebootID: "r"}, rebootErr: errors.New("denied"), wantCode: proto.CodeOpFailed},
		{name: "no reboot id", req: proto.PatchRebootRequest{}, wantCode: proto.CodeOpInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rb := &fakeRebooter{err: tc.rebootErr}
			h := runtime.NewHandlers()
			require.NoError(t, ops.Register(h, ops.Options{Rebooter: rb,
				SignedIn:       func(context.Context) ([]string, error) { return tc.users, tc.usersErr },
				RebootRequired: func(context.Context) (bool, error) { return tc.required, nil }}))
			require.Nil(t, h.Lookup(proto.EventPatchInstall), "no installer, no install handler")
			fn := h.Lookup(proto.EventPatchReboot)
			require.NotNil(t, fn)
			payload, err := json.Marshal(tc.req)
			require.NoError(t, err)
			out, err := fn(t.Context(), &recorder{}, payload)
			if tc.wantCode != "" {
				var perr *proto.Error
				require.ErrorAs(t, err, &perr)
				require.Equal(t, tc.wantCode, perr.Code)
				require.Empty(t, rb.messages)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, out)
			if tc.wantReboot {
				require.Equal(t, []string{ops.RebootMessage}, rb.messages)
			} else {
				require.Empty(t, rb.messages)
			}
		})
	}
}

// A rebooter without a way to list sessions is refused at registration:
// the agent must never reboot because it could not tell.
func TestPatchRebootNeedsSessions(t *testing.T) {
	t.Parallel()
	require.Error(t, ops.Register(runtime.NewHandlers(), ops.Options{Rebooter: &fakeRebooter{}}))
}
