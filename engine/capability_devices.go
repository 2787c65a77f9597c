package engine

import (
	"net/http"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/api"
	"github.com/cairn-rmm/cairn/internal/devices"
)

// devicesCapability is the device list and details, inventory, the
// activity feed and the agents' callbacks (heartbeats, inventory, check-
// ins). Several capabilities share the device service, so core builds it.
var devicesCapability = Capability{
	Name: "devices",
	Codes: []cairn.Code{
		{ID: devices.ECodeAgentAnswer, Status: http.StatusBadGateway},
	},
	API: func(*Engine) api.Area { return api.DevicesArea },
}
