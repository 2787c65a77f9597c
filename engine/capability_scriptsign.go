package engine

import (
	"net/http"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/api"
	"github.com/cairn-rmm/cairn/internal/scriptsign"
)

// scriptSignCapability is the script signing keys agents trust and their
// rotation. Grants and artifacts share the signer, so core builds it.
var scriptSignCapability = Capability{
	Name: "scriptsign",
	Codes: []cairn.Code{
		{ID: scriptsign.ECodeRotationPending, Status: http.StatusConflict},
	},
	API: func(*Engine) api.Area { return api.ScriptSignArea },
}
