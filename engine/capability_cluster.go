package engine

import (
	"context"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/activities"
	"github.com/cairn-rmm/cairn/api"
	"github.com/cairn-rmm/cairn/internal/cluster"
	"github.com/cairn-rmm/cairn/internal/serveradmin"
	"github.com/cairn-rmm/cairn/workflowclient"
	"github.com/cairn-rmm/cairn/workflows"
)

// clusterCapability is the cluster of issue 26 (docs/architecture.md
// "Cluster model"): every Engine process is a member that refreshes its
// row; a new one joins with a join code and an administrator's approval
// (ClusterAdmission workflows); the operator bridge (/v1/command) and the
// Internal job-scheduler helpers are its Internal-class routes.
var clusterCapability = Capability{
	Name: "cluster",
	Codes: []cairn.Code{
		{ID: cluster.ECodeJoinCodeInvalid, Status: http.StatusForbidden},
		{ID: cluster.ECodeJoinTokenInvalid, Status: http.StatusForbidden},
		{ID: cluster.ECodeAdmissionSettled, Status: http.StatusConflict},
	},
	Wire: func(_ context.Context, e *Engine) error {
		e.Cluster = cluster.New(e.Store, e.Internal, e.cfg.Now)
		return nil
	},
	Maintenance: []workflows.MaintenanceJob{
		{Name: "cluster-members", Every: time.Hour, Activity: "SweepClusterMembers"},
	},
	API: func(e *Engine) api.Area {
		area := api.ClusterArea{Cluster: e.Cluster, Artifacts: e.Artifacts, Namespace: e.cfg.Namespace,
			Admissions: workflowclient.ClusterAdmissions{Client: e.client(), TaskQueue: e.cfg.EngineQueue}}
		if e.Presence != nil {
			area.MemberID = e.Presence.ReplicaID
		}
		return area
	},
	Workflows: []any{workflows.ClusterAdmission},
	Activities: func(e *Engine) []any {
		return []any{&activities.Cluster{
			Settle: func(ctx context.Context, id, decision, actor string) (string, error) {
				return e.Cluster.Settle(ctx, id, decision, actor, e.cfg.PublicURL)
			},
			Sweep: e.Cluster.DeleteStale,
		}}
	},
}

// clusterSelf is this process as a cluster member.
func (e *Engine) clusterSelf() cluster.Self {
	role, url := cluster.RoleEngine, e.cfg.PublicURL
	if e.cfg.Role == RoleSiteWorker {
		role, url = cluster.RoleWorker, e.cfg.AgentEndpoint
	}
	host, _ := os.Hostname()
	return cluster.Self{MemberID: e.Presence.ReplicaID, Role: role, Name: host + ":" + strconv.Itoa(os.Getpid()),
		Version: serveradmin.BuildInfo().Version, URL: url, AdmissionID: e.cfg.ClusterAdmission, StartedAt: started,
		Sites: e.Workers.RunningSites}
}
