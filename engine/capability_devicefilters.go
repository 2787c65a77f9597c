package engine

import (
	"net/http"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/api"
	"github.com/cairn-rmm/cairn/internal/devicefilters"
)

// deviceFiltersCapability is saved device filters and device-list views.
// The device list and scheduled jobs evaluate filters, so core builds the
// filter service.
var deviceFiltersCapability = Capability{
	Name: "devicefilters",
	Codes: []cairn.Code{
		{ID: devicefilters.ECodeFilterInUse, Status: http.StatusConflict},
	},
	API: func(*Engine) api.Area { return api.DeviceFiltersArea },
}
