package agentgateway

import (
	"context"
	"net/url"
	"strings"
	"time"

	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/devicetrust"
)

// Agent endpoints: a process that takes agent sockets and is reached at
// an address of its own (a standalone `cairn worker`) records that
// address with the sites it runs, every EndpointRefresh; the realtime
// route hands it to agents of those sites. A process that dies stops
// being named within EndpointFreshFor.
const (
	EndpointRefresh  = 10 * time.Second
	EndpointFreshFor = 35 * time.Second
)

// siteLister is a SiteRunner that can list the sites it runs
// (*workers.Manager).
type siteLister interface {
	RunningSites() []string
}

// recordEndpoint upserts this process's endpoint with the sites it runs.
func (h *Hub) recordEndpoint(ctx context.Context) {
	var slugs []string
	if l, ok := h.sites.(siteLister); ok {
		slugs = l.RunningSites()
	}
	if slugs == nil {
		slugs = []string{}
	}
	err := h.store.AgentEndpointUpsert(ctx, db.AgentEndpointUpsertParams{Replica: h.replica, Url: h.opts.Endpoint, Sites: slugs})
	if err != nil && ctx.Err() == nil {
		h.log.Error("record agent endpoint", "err", err)
	}
}

func (h *Hub) forgetEndpoint() {
	ctx, cancel := dbContext()
	defer cancel()
	if err := h.store.AgentEndpointDelete(ctx, h.replica); err != nil {
		h.log.Warn("forget agent endpoint", "err", err)
	}
}

// Route answers GET proto.PathRealtimeRoute for dev. A process that runs
// the device's site keeps the agent (the socket's address under origin,
// the Engine origin the agent reached); otherwise the least loaded live
// endpoint that runs the site is named; with none, origin is, and the
// agent is told wrong_worker there until a process runs the site.
func (h *Hub) Route(ctx context.Context, dev devicetrust.Identity, origin *url.URL) (proto.Route, error) {
	route := proto.Route{URL: socketURL(origin), SiteSlug: dev.SiteSlug, Worker: h.opts.QueueOf(dev.SiteSlug)}
	if h.sites.Runs(dev.SiteSlug) {
		return route, nil
	}
	rows, err := h.store.AgentEndpointForSite(ctx, db.AgentEndpointForSiteParams{Slug: dev.SiteSlug, FreshSeconds: EndpointFreshFor.Seconds()})
	if err != nil {
		return proto.Route{}, err
	}
	for _, r := range rows {
		if u, err := url.Parse(r.Url); err == nil && u.Host != "" {
			route.URL = socketURL(u)
			break
		}
	}
	return route, nil
}

// socketURL is the realtime socket's ws(s) address under an http(s) origin.
func socketURL(origin *url.URL) string {
	u := url.URL{Scheme: "ws", Host: origin.Host, Path: strings.TrimSuffix(origin.Path, "/") + proto.PathRealtimeWS}
	if origin.Scheme == "https" || origin.Scheme == "wss" {
		u.Scheme = "wss"
	}
	return u.String()
}
