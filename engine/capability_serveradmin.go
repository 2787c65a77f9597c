package engine

import (
	"context"
	"net/http"
	"os"
	"time"

	"github.com/google/uuid"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/activities"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/api"
	"github.com/cairn-rmm/cairn/internal/internalauth"
	"github.com/cairn-rmm/cairn/internal/serveradmin"
	"github.com/cairn-rmm/cairn/workflowclient"
	"github.com/cairn-rmm/cairn/workflows"
)

// started is when this process built its first Engine.
var started = time.Now()

// serverAdminCapability is the server administration of issue 26: the
// clock, time zones, the backend's status and the overview, the logs,
// and the service actions (ServiceAction workflows).
var serverAdminCapability = Capability{
	Name: "serveradmin",
	Codes: []cairn.Code{
		{ID: serveradmin.ECodeNoSupervisor, Status: http.StatusConflict},
		// The Internal auth class (internal/internalauth).
		{ID: internalauth.ECodeSignatureInvalid, Status: http.StatusUnauthorized},
		{ID: internalauth.ECodeSignatureStale, Status: http.StatusUnauthorized},
		{ID: internalauth.ECodeSignatureReplayed, Status: http.StatusUnauthorized},
		{ID: internalauth.ECodeKeyLimit, Status: http.StatusConflict},
	},
	// Seen Internal signatures are written per internal request and kept
	// only for twice the timestamp window.
	Maintenance: []workflows.MaintenanceJob{
		{Name: "internal-signatures", Every: time.Minute, Activity: "SweepInternalSignatures"},
	},
	API: func(e *Engine) api.Area {
		area := api.ServerAdminArea{Started: started, LogDir: e.cfg.LogDir,
			Actions: workflowclient.ServiceActions{Client: e.client(), Namespace: e.cfg.Namespace, TaskQueue: e.cfg.EngineQueue}}
		if e.cfg.Restart != nil {
			area.Supervisor, area.RestartEngine = serveradmin.Supervisor(os.Getenv), e.cfg.Restart
		}
		return area
	},
	Workflows: []any{workflows.ServiceAction},
	Activities: func(e *Engine) []any {
		a := &activities.ServiceAdmin{Workers: e.Workers,
			Started: func(queue string) (time.Time, bool) {
				st, ok := e.Workers.Status(queue)
				return st.Since, ok
			},
			Tunnels: e.reconcileTunnels, Internal: e.Internal}
		if certs := e.cfg.TLS; certs != nil {
			a.Certificate = func() (before, after activities.CertificateState, err error) {
				b := certs.Info()
				err = certs.Refresh()
				n := certs.Info()
				return activities.CertificateState{Fingerprint: b.Fingerprint, NotAfter: b.NotAfter},
					activities.CertificateState{Fingerprint: n.Fingerprint, NotAfter: n.NotAfter}, err
			}
		}
		return []any{a}
	},
}

// reconcileTunnels asks every active tunnel's device to establish it
// again, as POST /api/server/wireguard/recover does for an admin: it
// returns the establishment workflows started.
func (e *Engine) reconcileTunnels(ctx context.Context, actor string) ([]string, error) {
	if e.Tunnels == nil {
		return nil, nil
	}
	active, err := e.Tunnels.Active(ctx, cairn.AllSites)
	if err != nil {
		return nil, err
	}
	starter := workflowclient.TunnelStarter{Client: e.client(), Grants: e.Grants}
	var ids []string
	for _, t := range active {
		target, err := e.Devices.OperationTargetByGUID(ctx, cairn.AllSites, cairn.DeviceGUID(t.DeviceGUID))
		if err == nil {
			err = target.Require(proto.CapTunnel)
		}
		if err != nil {
			continue // moved, quarantined or too old meanwhile: nothing to recover
		}
		id, err := starter.Start(ctx, workflows.TunnelInput{OperationID: uuid.NewString(), Target: target, Actor: actor, Reason: "recover"})
		if err != nil {
			return ids, err
		}
		ids = append(ids, id)
	}
	return ids, nil
}
