package api

import (
	"net/http"
	"slices"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/internal/auth"
)

// Device content (issue 21 item 11, docs/api.md "API tokens", architecture
// "Device content scope"): what is on a device, not what the device is.
// File text, registry values, transferred files and shell transcripts are
// refused to a read token without auth.ScopeReadDeviceContent; process
// command lines are redacted instead, so the rest of the device view
// stays readable. Both use auth.Principal.CanReadDeviceContent.

// errScopeRequired refuses a read token without the device content scope.
var errScopeRequired = cairn.Errorf(cairn.ECodeScopeRequired,
	"reading device content (file text, registry values, transferred files, shell transcripts) with a read API token needs the %s scope",
	auth.ScopeReadDeviceContent)

// deviceContent marks a route that answers device content: a read token
// without the scope gets 403 scope_required before the handler runs.
func (s *Server) deviceContent(e Endpoint) Endpoint {
	inner := e.serve
	e.serve = func(w http.ResponseWriter, r *http.Request) {
		if p := principal(r.Context()); p != nil && !p.CanReadDeviceContent() {
			writeError(w, r, s.Log, errScopeRequired)
			return
		}
		inner(w, r)
	}
	e.deviceContent = true
	return e.Errors(cairn.ECodeScopeRequired)
}

// DeviceContent reports a route marked with deviceContent (the
// authorization matrix checks the set).
func (e Endpoint) DeviceContent() bool { return e.deviceContent }

// visibleProcesses is ps as the caller may see it: without the device
// content scope every command line is blanked (a command line can carry
// passwords and tokens), and redacted says so.
func visibleProcesses(p *auth.Principal, ps []proto.Process) (out []proto.Process, redacted bool) {
	if ps == nil || p.CanReadDeviceContent() {
		return ps, false
	}
	out = slices.Clone(ps)
	for i := range out {
		out[i].Command = ""
	}
	return out, true
}
