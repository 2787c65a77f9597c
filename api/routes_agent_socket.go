package api

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/agent/proto"
)

// agentSocketRoutes are the realtime route and socket (Device).
func (s *Server) agentSocketRoutes() []Route {
	return []Route{
		{"GET", proto.PathRealtimeRoute, AuthDevice, getAction(s, func(r *http.Request) (proto.Route, error) {
			if s.Sockets == nil {
				return proto.Route{}, cairn.Errorf(cairn.ECodeUnavailable, "this Engine runs no site workers")
			}
			return s.Sockets.Route(r.Context(), *deviceFrom(r.Context()), s.originFor(r))
		}).Errors(cairn.ECodeUnavailable), "Get the agent's realtime route"},
		{"GET", proto.PathRealtimeWS, AuthDevice, raw(func(w http.ResponseWriter, r *http.Request) {
			if s.Sockets == nil {
				writeError(w, r, s.Log, cairn.Errorf(cairn.ECodeWrongWorker, "this Engine runs no site workers"))
				return
			}
			s.Sockets.Serve(w, r, *deviceFrom(r.Context()))
		}).Stream(http.StatusSwitchingProtocols, "").Errors(cairn.ECodeWrongWorker, cairn.ECodeUnavailable), "Open the agent's realtime socket"},
	}
}

// originFor is the Engine origin the agent reached: the agent URL whose
// scheme and host match the request, else the public URL.
func (s *Server) originFor(r *http.Request) *url.URL {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	for _, o := range s.agentOrigins {
		if o.Scheme == scheme && strings.EqualFold(o.Host, r.Host) {
			return o
		}
	}
	for _, o := range s.agentOrigins {
		if o.Scheme == scheme {
			return o
		}
	}
	if len(s.agentOrigins) > 0 {
		return s.agentOrigins[0]
	}
	return &url.URL{Scheme: scheme, Host: r.Host}
}
