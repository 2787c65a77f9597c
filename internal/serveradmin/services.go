package serveradmin

import (
	"strings"

	"github.com/cairn-rmm/cairn"
)

// Service actions of POST /api/server/services/<service_key>/action.
const (
	// ActionRestart restarts a site worker (service key worker:site:<slug>).
	ActionRestart = "restart"
	// ActionReloadCertificate reloads the public edge's certificate
	// (service key edge): a provided pair is read again, the local CA's
	// certificate renewed when due.
	ActionReloadCertificate = "reload_certificate"
	// ActionReconcileTunnels asks every active WireGuard tunnel to be
	// established again (service key tunnels), as POST
	// /api/server/wireguard/recover does.
	ActionReconcileTunnels = "reconcile_tunnels"
)

// Service keys besides the site workers' worker:site:<slug>.
const (
	ServiceEngine  = "engine"
	ServiceEdge    = "edge"
	ServiceTunnels = "tunnels"
	// SiteWorkerPrefix starts a site worker's key; the task queue follows.
	SiteWorkerPrefix = "worker:site:"
)

// ECodeNoSupervisor answers an Engine restart where no supervisor would
// start the Engine again.
const ECodeNoSupervisor = "no_supervisor"

// ServiceAction is a validated service action.
type ServiceAction struct {
	Service string `json:"service"`
	Action  string `json:"action"`
	// SiteSlug is the site whose worker a restart names.
	SiteSlug string `json:"site_slug,omitempty"`
}

// actionsOf are the actions each kind of service takes.
var actionsOf = map[string][]string{
	ServiceEdge:      {ActionReloadCertificate},
	ServiceTunnels:   {ActionReconcileTunnels},
	SiteWorkerPrefix: {ActionRestart},
}

// ParseServiceAction validates a service key and an action; siteExists
// says whether a site of that slug exists. The Engine itself has no queued
// action: its restart is POST .../engine/restart.
func ParseServiceAction(key, action string, siteExists func(slug string) bool) (ServiceAction, error) {
	kind, slug := key, ""
	if rest, isSite := strings.CutPrefix(key, SiteWorkerPrefix); isSite {
		slug = rest
		kind = SiteWorkerPrefix
		if slug == "" || !siteExists(slug) {
			return ServiceAction{}, cairn.Invalid("service_key", "no site worker of that name")
		}
	}
	allowed, ok := actionsOf[kind]
	if !ok {
		return ServiceAction{}, cairn.Invalid("service_key", "must be edge, tunnels or worker:site:<slug> (the Engine restarts through /restart)")
	}
	for _, a := range allowed {
		if a == action {
			return ServiceAction{Service: key, Action: action, SiteSlug: slug}, nil
		}
	}
	return ServiceAction{}, cairn.Invalid("action", "must be "+strings.Join(allowed, " or ")+" for this service")
}

// Supervisor names what restarts this process when it exits, from its
// environment: "systemd" when systemd started it (INVOCATION_ID, or
// NOTIFY_SOCKET for Type=notify units), "" when nothing known does.
func Supervisor(getenv func(string) string) string {
	if getenv("INVOCATION_ID") != "" || getenv("NOTIFY_SOCKET") != "" {
		return "systemd"
	}
	return ""
}
