package engine

import (
	"time"

	"github.com/cairn-rmm/cairn/api"
)

// started is when this process built its first Engine.
var started = time.Now()

// serverAdminCapability is the read-only server administration of issue
// 26: the clock, time zones, the backend's status and the overview.
var serverAdminCapability = Capability{
	Name: "serveradmin",
	API:  func(e *Engine) api.Area { return api.ServerAdminArea{Started: started, LogDir: e.cfg.LogDir} },
}
