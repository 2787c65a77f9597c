package main

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"slices"

	"github.com/cairn-rmm/cairn/agent"
	agentfiles "github.com/cairn-rmm/cairn/agent/files"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/agent/roles"
	agentruntime "github.com/cairn-rmm/cairn/agent/runtime"
	"github.com/cairn-rmm/cairn/agent/shells"
)

// endRoleWork ends what a stopped role still runs: the remote_shell
// role's open shells, each told why (proto.ShellReasonRoleStopped).
func endRoleWork(sh *shells.Shells) func(ctx context.Context, role string) {
	return func(ctx context.Context, role string) {
		if role == roles.RemoteShell {
			sh.EndAll(ctx, proto.ShellReasonRoleStopped)
		}
	}
}

// remoteDesktopMissing is why vnc and rdp are Unhealthy in this build.
const remoteDesktopMissing = "not in this agent build yet: remote desktop (VNC, RDP) has not landed"

// publishRoles checks, once at start, the roles that have no collector of
// their own to report them (docs/agent.md "Role health"): the privileged
// process itself (system_context), file browsing, the registry editor, a
// shell that starts, and the remote-desktop roles this build lacks. The
// realtime socket (api_websocket) and the tunnel (vpn_tunnel) report as
// they run.
func publishRoles(t *roles.Tracker, hasRegistry bool) {
	t.Register(roles.SystemContext).Report(systemContext())
	t.Register(roles.FileManagement).Report(agentfiles.Check())
	reg := t.Register(roles.RegistryManagement)
	if hasRegistry {
		reg.Report(nil)
	} else {
		reg.Report(roles.Unsupported("there is no registry on %s", runtime.GOOS))
	}
	t.Register(roles.RemoteShell).Report(shells.Check())
	t.Register(roles.VNC).Report(roles.Unsupported(remoteDesktopMissing))
}

// registerRoleControl makes the operator's stopped roles (agent.json
// roles_stopped) stopped in t, refuses their requests with role_stopped,
// and serves role_desired_state: the new desired state is written to
// agent.json first, so a role stopped stays stopped after a restart.
// onStop (may be nil) runs once a role is stopped, before the answer: it
// ends what the role still runs (the remote_shell role's open shells), so
// stopping a role ends its work, not only new requests.
func registerRoleControl(handlers *agentruntime.Handlers, t *roles.Tracker, store agentruntime.FileStore, stopped []string,
	onStop func(ctx context.Context, role string)) error {
	for _, name := range stopped {
		if roles.Stoppable(name) {
			if err := t.SetDesired(name, roles.DesiredStopped); err != nil {
				return err
			}
		}
	}
	handlers.Guard(t.Refusal)
	return handlers.Register(proto.EventRoleDesiredState, func(ctx context.Context, _ agentruntime.Caller, payload json.RawMessage) (any, error) {
		var req proto.RoleDesiredStateRequest
		if err := json.Unmarshal(payload, &req); err != nil {
			return nil, &proto.Error{Code: proto.CodeOpInvalid, Message: "the request is not a role desired state: " + err.Error()}
		}
		if !slices.Contains(roles.Names, req.Role) && !slices.Contains(roles.Connection, req.Role) {
			return nil, &proto.Error{Code: proto.CodeOpInvalid, Message: fmt.Sprintf("unknown role %q", req.Role), Fields: map[string]string{"role": "unknown role"}}
		}
		if !roles.Stoppable(req.Role) {
			return nil, &proto.Error{Code: proto.CodeRoleNotStoppable, Message: fmt.Sprintf("the %s role cannot be stopped", req.Role)}
		}
		if req.Desired != roles.DesiredRunning && req.Desired != roles.DesiredStopped {
			return nil, &proto.Error{Code: proto.CodeOpInvalid, Message: "desired must be running or stopped", Fields: map[string]string{"desired": "must be running or stopped"}}
		}
		if _, err := store.Update(func(c *agent.Config) error {
			c.RolesStopped = slices.DeleteFunc(c.RolesStopped, func(n string) bool { return n == req.Role })
			if req.Desired == roles.DesiredStopped {
				c.RolesStopped = append(c.RolesStopped, req.Role)
				slices.Sort(c.RolesStopped)
			}
			return nil
		}); err != nil {
			return nil, fmt.Errorf("store the desired state: %w", err)
		}
		if err := t.SetDesired(req.Role, req.Desired); err != nil {
			return nil, err
		}
		if req.Desired == roles.DesiredStopped && onStop != nil {
			onStop(ctx, req.Role)
		}
		h, _ := t.Register(req.Role).Health()
		return proto.RoleDesiredStateResult{Role: req.Role, Desired: h.Desired, Observed: h.Observed}, nil
	})
}
