package vnc

import (
	"golang.org/x/sys/windows"

	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/agent/roles"
	"github.com/cairn-rmm/cairn/agent/vnc/rfbserver"
)

// Windows ships no VNC server to manage: the agent serves RFB itself over
// GDI capture and SendInput (rfb.go).
func newServer() server { return &rfbServer{label: serverName, open: openWindowsDesktop} }

// serverName is the role's context "server": which server and capture.
const serverName = "cairn-rfb (GDI capture, SendInput)"

type windowsDesktop struct{ *rfbserver.Desktop }

func (windowsDesktop) Monitors() ([]proto.Monitor, error) {
	mons, err := rfbserver.Monitors()
	if err != nil {
		return nil, err
	}
	out := make([]proto.Monitor, 0, len(mons))
	for _, m := range mons {
		out = append(out, proto.Monitor{Name: m.Name, X: m.Rect.Min.X, Y: m.Rect.Min.Y, Width: m.Rect.Dx(), Height: m.Rect.Dy(), Primary: m.Primary})
	}
	return out, nil
}

// openWindowsDesktop is the desktop of the agent's own session. A
// service runs in session 0, which has no user desktop (session 0
// isolation): it is refused rather than served blank.
func openWindowsDesktop() (desktop, error) {
	var id uint32
	if err := windows.ProcessIdToSessionId(windows.GetCurrentProcessId(), &id); err == nil && id == 0 {
		return nil, roles.Unsupported("No Desktop Environment Active: the agent runs in session 0 (a service), which cannot capture or drive the user's desktop; the per-session helper is not built yet")
	}
	d := rfbserver.NewDesktop()
	if _, err := d.Capture(); err != nil {
		return nil, roles.Unsupported("No Desktop Environment Active: %v", err)
	}
	return windowsDesktop{d}, nil
}
