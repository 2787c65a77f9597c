package engine

import (
	"context"

	"github.com/cairn-rmm/cairn/api"
	"github.com/cairn-rmm/cairn/internal/sourcehost"
)

// sourceHostCapability is the source-hosting token and branch heads.
var sourceHostCapability = Capability{
	Name: "sourcehost",
	Wire: func(_ context.Context, e *Engine) error {
		e.SourceHost = sourcehost.NewService(e.Store, e.Cipher, sourcehost.Config{APIURL: e.cfg.GitHubAPIURL,
			EnvToken: e.cfg.GitHubToken, Now: e.cfg.Now})
		return nil
	},
	API: func(e *Engine) api.Area { return api.SourceHostArea{SourceHost: e.SourceHost} },
}
