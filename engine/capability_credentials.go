package engine

import (
	"context"

	"github.com/cairn-rmm/cairn/api"
	"github.com/cairn-rmm/cairn/internal/credentials"
)

// credentialsCapability is the stored remote-session credentials.
var credentialsCapability = Capability{
	Name: "credentials",
	Wire: func(_ context.Context, e *Engine) error {
		e.Credentials = credentials.NewService(e.Store, e.Cipher)
		return nil
	},
	API: func(e *Engine) api.Area { return api.CredentialsArea{Credentials: e.Credentials} },
}
