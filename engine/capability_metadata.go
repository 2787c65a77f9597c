package engine

import (
	"net/http"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/api"
	"github.com/cairn-rmm/cairn/internal/metadata"
)

// metadataCapability is metadata fields: definitions, per-device values
// and their sync with agents.
var metadataCapability = Capability{
	Name: "metadata",
	Codes: []cairn.Code{
		{ID: metadata.ECodeReservedField, Status: http.StatusConflict},
	},
	API: func(*Engine) api.Area { return api.MetadataArea },
}
