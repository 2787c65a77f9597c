package engine

import (
	"net/http"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/api"
	"github.com/cairn-rmm/cairn/internal/software"
	"github.com/cairn-rmm/cairn/workflows"
)

// softwareCapability is the software audit: installed software across
// devices and the rules that block uninstalls.
var softwareCapability = Capability{
	Name: "software",
	Codes: []cairn.Code{
		{ID: software.ECodeUninstallBlocked, Status: http.StatusConflict},
	},
	API: func(*Engine) api.Area { return api.SoftwareArea },
	// An uninstall: its job run, then a software refresh (issue 27).
	Workflows: []any{workflows.SoftwareUninstall},
}
