package engine

import (
	"net/http"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/api"
)

// registryCapability is the Windows registry editor, through
// DeviceOperation.
var registryCapability = Capability{
	Name: "registry",
	Codes: []cairn.Code{
		{ID: proto.CodeUnsupportedPlatform, Status: http.StatusUnprocessableEntity, Agent: true},
		{ID: proto.CodePathExists, Status: http.StatusConflict, Agent: true},
		{ID: proto.CodeRegistryKeyNotFound, Status: http.StatusNotFound, Agent: true},
		{ID: proto.CodeRegistryValueNotFound, Status: http.StatusNotFound, Agent: true},
		{ID: proto.CodeRegistryTypeInvalid, Status: http.StatusBadRequest, Agent: true},
	},
	API:      func(*Engine) api.Area { return api.RegistryArea },
	AgentOps: []string{proto.EventRegistryManagement},
}
