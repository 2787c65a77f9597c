package main

import (
	"runtime"

	agentfiles "github.com/cairn-rmm/cairn/agent/files"
	"github.com/cairn-rmm/cairn/agent/roles"
	"github.com/cairn-rmm/cairn/agent/shells"
)

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
	for _, name := range []string{roles.VNC, roles.RDP} {
		t.Register(name).Report(roles.Unsupported(remoteDesktopMissing))
	}
}
