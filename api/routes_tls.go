package api

import (
	"net/http"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/internal/tlsca"
)

func (s *Server) tlsRoutes() []Route {
	return []Route{
		// The CA certificate is public: installers fetch it to pin it.
		{"GET", "/api/tls/ca.pem", AuthNone, raw(s.caPEM).Stream(http.StatusOK, "application/x-pem-file").Errors(cairn.ECodeNotFound), "Get the Engine's CA certificate"},
	}
}

// caPEM answers the local CA certificate agents pin. A provided
// certificate chains to a CA the operator chose, which the Engine does not
// hold, and an Engine without HTTPS has no CA at all.
func (s *Server) caPEM(w http.ResponseWriter, r *http.Request) {
	if s.TLS == nil || s.TLS.Mode() != tlsca.ModeLocalCA {
		writeError(w, r, s.Log, cairn.Errorf(cairn.ECodeNotFound,
			"this Engine has no local CA: it serves a provided certificate (CAIRN_TLS_CERT_FILE) or no HTTPS; agents verify it with the system's trusted CAs"))
		return
	}
	w.Header().Set("Content-Type", "application/x-pem-file")
	w.Header().Set("Content-Disposition", `attachment; filename="cairn-ca.pem"`)
	w.Header().Set("Cache-Control", "no-cache")
	_, _ = w.Write(s.TLS.CAPEM())
}
