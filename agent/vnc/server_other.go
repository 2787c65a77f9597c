//go:build !linux && !windows

package vnc

import (
	"context"

	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/agent/roles"
)

// unsupportedServer: no VNC server is built for this platform yet (the
// Windows role, an RFB server over GDI/DXGI capture and SendInput, is
// issue 23's next slice).
type unsupportedServer struct{}

func newServer() server { return unsupportedServer{} }

func (unsupportedServer) name() string { return "none" }

func (unsupportedServer) start(context.Context, serverConfig) error {
	return roles.Unsupported("the VNC role is not built for this platform yet")
}

func (unsupportedServer) running() bool { return false }

func (unsupportedServer) stop() {}

func (unsupportedServer) topology(context.Context, string) ([]proto.Monitor, error) {
	return nil, roles.Unsupported("the VNC role is not built for this platform yet")
}
