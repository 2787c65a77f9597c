//go:build !linux && !windows

package rdp

import (
	"context"

	"github.com/cairn-rmm/cairn/agent/roles"
)

// unsupported is the role where it is not built yet (Windows: behaviour
// 14's registry, service and firewall management; docs/agent.md "RDP").
type unsupported struct{}

func newService() Service { return unsupported{} }

func (unsupported) Name() string                 { return "" }
func (unsupported) State(context.Context) string { return "unknown" }
func (unsupported) Start(context.Context, bool) error {
	return roles.Unsupported("the RDP role is not built for this platform yet")
}
func (unsupported) Firewall() string { return "not_managed" }
func (unsupported) Unsupported() error {
	return roles.Unsupported("the RDP role is not built for this platform yet")
}
