package vnc

import (
	"fmt"
	"strings"

	"github.com/cairn-rmm/cairn/agent/proto"
)

// ParseMonitors reads `xrandr --listmonitors`:
//
//	Monitors: 2
//	 0: +*DP-1 1920/530x1080/300+0+0  DP-1
//	 1: +HDMI-1 1280/340x1024/270+1920+0  HDMI-1
func ParseMonitors(out string) ([]proto.Monitor, error) {
	var mons []proto.Monitor
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) < 3 || !strings.HasSuffix(f[0], ":") || f[0] == "Monitors:" {
			continue
		}
		name := strings.TrimLeft(f[1], "+*")
		m := proto.Monitor{Name: name, Primary: strings.Contains(f[1], "*")}
		var wmm, hmm int
		if _, err := fmt.Sscanf(f[2], "%d/%dx%d/%d+%d+%d", &m.Width, &wmm, &m.Height, &hmm, &m.X, &m.Y); err != nil {
			return nil, fmt.Errorf("monitor line %q: %w", strings.TrimSpace(line), err)
		}
		mons = append(mons, m)
	}
	if len(mons) == 0 {
		return nil, fmt.Errorf("xrandr listed no monitors")
	}
	return mons, nil
}
