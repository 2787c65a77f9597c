package api

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/internal/agentartifacts"
	"github.com/cairn-rmm/cairn/internal/cluster"
	"github.com/cairn-rmm/cairn/internal/ratelimit"
	"github.com/cairn-rmm/cairn/internal/serveradmin"
	"github.com/cairn-rmm/cairn/workflows"
)

// ClusterAdmissionRunner starts admissions and signals decisions
// (workflowclient.ClusterAdmissions).
type ClusterAdmissionRunner interface {
	Start(ctx context.Context, id string, expiresAt time.Time) (string, error)
	Decide(ctx context.Context, id string, d workflows.ClusterDecision) (string, error)
}

// ClusterArea is the cluster of issue 26 (SPEC "Server administration"
// cluster rows, "Bootstrap" join rows, "Health and gateway" /v1/command
// and the Internal job-scheduler helpers; docs/architecture.md "Cluster
// model").
type ClusterArea struct {
	Cluster    *cluster.Service
	Admissions ClusterAdmissionRunner
	// Artifacts are the agent builds the releases list.
	Artifacts *agentartifacts.Catalog
	// MemberID is this process's member ID.
	MemberID  string
	Namespace string
	// FollowEvery is how often the joiner's stream reads its admission
	// (default one second).
	FollowEvery time.Duration
}

type clusterAPI struct {
	*Server
	ClusterArea
}

func (d ClusterArea) routes(s *Server) []Route {
	a := &clusterAPI{Server: s, ClusterArea: d}
	decide := func(decision string) Endpoint {
		return jsonAction(s, http.StatusAccepted, true, func(r *http.Request, _ struct{}) (admissionDecisionJSON, error) {
			return a.decide(r.Context(), pathParam(r, "id"), decision, principal(r.Context()).Username)
		}).Errors(cairn.ECodeNotFound, cluster.ECodeAdmissionSettled)
	}
	return []Route{
		{"GET", "/api/server/cluster", AuthAdmin, getAction(s, a.state).
			Summary("Members (Engine replicas and site workers) with role, version and last seen, admissions, and the PostgreSQL and Temporal roles."), "Get the cluster's state"},
		{"GET", "/api/server/cluster/banner", AuthAdmin, getAction(s, a.banner), "Get the cluster banner"},
		{"GET", "/api/server/cluster/events", AuthAdmin, getAction(s, a.events).
			Query(queryInteger("limit", "newest events answered, 1 to 500 (default 100)")), "List the cluster's events"},
		{"GET", "/api/server/cluster/releases", AuthAdmin, getAction(s, a.releases), "List Engine versions and agent artifacts"},
		{"POST", "/api/server/cluster/join-codes", AuthAdmin, s.sudo(jsonAction(s, http.StatusCreated, false, func(r *http.Request, req joinCodeRequest) (cluster.JoinCode, error) {
			return a.Cluster.IssueJoinCode(r.Context(), req.Role, principal(r.Context()).Username)
		}).Summary("Issue a one-time join code (shown this once, valid an hour) for a process of the role.")), "Issue a cluster join code"},
		{"POST", "/api/server/cluster/admissions/{id}/approve", AuthAdmin, s.sudo(decide(cluster.DecisionApprove).
			Summary("Approve a pending admission (after re-authentication: it hands out an Internal key): its workflow seals the key and the Engine's URL to the joiner's key.")), "Approve an admission"},
		{"POST", "/api/server/cluster/admissions/{id}/cancel", AuthAdmin, decide(cluster.DecisionCancel), "Cancel an admission"},
		{"POST", "/api/bootstrap/cluster/join", AuthNone, jsonAction(s, http.StatusCreated, false, a.join).
			Summary("A process asks to join with an administrator's join code and its X25519 public key; the answer's token authenticates its events stream.").
			Errors(cluster.ECodeJoinCodeInvalid, cairn.ECodeRateLimited), "Ask to join the cluster"},
		{"GET", "/api/bootstrap/cluster/join/{id}/events", AuthNone, raw(a.follow).Stream(http.StatusOK, "text/event-stream").
			Summary("The joiner's progress (header "+cluster.TokenHeader+"): event, admission and, once approved, handoff (the sealed box, sent once).").
			Errors(cluster.ECodeJoinTokenInvalid, cairn.ECodeRateLimited), "Follow a join request"},
		{"POST", "/v1/command", AuthInternal, jsonAction(s, http.StatusOK, false, a.command).
			Summary("The operator bridge: a `cairn command` run on a host, signed with an Internal key.").
			Errors(cairn.ECodeNotFound, cluster.ECodeAdmissionSettled), "Run an operator bridge command"},
		{"GET", "/api/internal/job-scheduler/public-base-url", AuthInternal, getAction(s, func(*http.Request) (publicBaseURLJSON, error) {
			return publicBaseURLJSON{PublicBaseURL: s.PublicURL}, nil
		}).Summary("The Engine's public URL, which a standalone worker started without one asks for."), "Get the public base URL"},
	}
}

type joinCodeRequest struct {
	Role string `json:"role" openapi:"enum=engine|worker"`
}

func (r *joinCodeRequest) validate() error {
	if r.Role != cluster.RoleEngine && r.Role != cluster.RoleWorker {
		return cairn.Invalid("role", "must be engine or worker")
	}
	return nil
}

type publicBaseURLJSON struct {
	PublicBaseURL string `json:"public_base_url"`
}

type temporalRoleJSON struct {
	Namespace string `json:"namespace"`
	State     string `json:"state" openapi:"enum=running|unreachable"`
}

type clusterStateJSON struct {
	// MemberID is the member answering.
	MemberID   string               `json:"member_id"`
	Members    []cluster.Member     `json:"members"`
	Admissions []cluster.Admission  `json:"admissions"`
	PostgreSQL cluster.PostgresRole `json:"postgresql"`
	Temporal   temporalRoleJSON     `json:"temporal"`
	Banner     cluster.Banner       `json:"banner"`
}

func (a *clusterAPI) state(r *http.Request) (clusterStateJSON, error) {
	ctx := r.Context()
	members, err := a.Cluster.Members(ctx)
	if err != nil {
		return clusterStateJSON{}, err
	}
	adm, err := a.Cluster.Admissions(ctx)
	if err != nil {
		return clusterStateJSON{}, err
	}
	hctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	tp := temporalRoleJSON{Namespace: a.Namespace, State: "running"}
	if a.Temporal == nil {
		tp.State = "unreachable"
	} else if _, err := a.Temporal.CheckHealth(hctx, &client.CheckHealthRequest{}); err != nil {
		tp.State = "unreachable"
	}
	return clusterStateJSON{MemberID: a.MemberID, Members: members, Admissions: adm, PostgreSQL: a.Cluster.Postgres(hctx),
		Temporal: tp, Banner: cluster.BannerOf(members, adm)}, nil
}

func (a *clusterAPI) banner(r *http.Request) (cluster.Banner, error) {
	members, err := a.Cluster.Members(r.Context())
	if err != nil {
		return cluster.Banner{}, err
	}
	adm, err := a.Cluster.Admissions(r.Context())
	if err != nil {
		return cluster.Banner{}, err
	}
	return cluster.BannerOf(members, adm), nil
}

type clusterEventsJSON struct {
	Events []cluster.Event `json:"events"`
}

func (a *clusterAPI) events(r *http.Request) (clusterEventsJSON, error) {
	limit := 100
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 500 {
			return clusterEventsJSON{}, cairn.Invalid("limit", "must be 1 to 500")
		}
		limit = n
	}
	ev, err := a.Cluster.Events(r.Context(), limit)
	return clusterEventsJSON{Events: ev}, err
}

type engineReleaseJSON struct {
	Version string `json:"version"`
	// Members are the members up on this version.
	Members []string `json:"members"`
}

type agentReleaseJSON struct {
	ID       string    `json:"id"`
	Platform string    `json:"platform"`
	BuildID  string    `json:"build_id"`
	BuildSeq int64     `json:"build_seq"`
	SHA256   string    `json:"sha256"`
	Size     int64     `json:"size"`
	Signed   bool      `json:"signed"`
	ModTime  time.Time `json:"modified_at"`
}

type clusterReleasesJSON struct {
	// Current is this Engine's build.
	Current serveradmin.Build   `json:"current"`
	Engine  []engineReleaseJSON `json:"engine"`
	Agent   []agentReleaseJSON  `json:"agent"`
}

func (a *clusterAPI) releases(r *http.Request) (clusterReleasesJSON, error) {
	members, err := a.Cluster.Members(r.Context())
	if err != nil {
		return clusterReleasesJSON{}, err
	}
	out := clusterReleasesJSON{Current: serveradmin.BuildInfo(), Engine: []engineReleaseJSON{}, Agent: []agentReleaseJSON{}}
	for _, m := range members {
		if m.State != "up" {
			continue
		}
		i := slices.IndexFunc(out.Engine, func(e engineReleaseJSON) bool { return e.Version == m.Version })
		if i < 0 {
			out.Engine = append(out.Engine, engineReleaseJSON{Version: m.Version, Members: []string{}})
			i = len(out.Engine) - 1
		}
		out.Engine[i].Members = append(out.Engine[i].Members, m.Name)
	}
	if a.Artifacts != nil {
		for _, art := range a.Artifacts.List() {
			out.Agent = append(out.Agent, agentReleaseJSON{ID: art.ID, Platform: art.Platform, BuildID: art.BuildID, BuildSeq: art.BuildSeq,
				SHA256: art.SHA256, Size: art.Size, Signed: art.ArtifactSignature != nil, ModTime: art.ModTime})
		}
	}
	return out, nil
}

type admissionDecisionJSON struct {
	Admission  cluster.Admission `json:"admission"`
	Decision   string            `json:"decision" openapi:"enum=approve|cancel"`
	WorkflowID string            `json:"workflow_id"`
}

// decide hands a pending admission's workflow the decision; the workflow
// records it (the admission's state changes shortly after the answer).
func (a *clusterAPI) decide(ctx context.Context, id, decision, actor string) (admissionDecisionJSON, error) {
	adm, err := a.Cluster.Pending(ctx, id)
	if err != nil {
		return admissionDecisionJSON{}, err
	}
	wid, err := a.Admissions.Decide(ctx, id, workflows.ClusterDecision{Decision: decision, Actor: actor})
	if err != nil {
		return admissionDecisionJSON{}, err
	}
	return admissionDecisionJSON{Admission: adm, Decision: decision, WorkflowID: wid}, nil
}

// join validates the request in cluster.Join, before the code is spent.
func (a *clusterAPI) join(r *http.Request, req cluster.JoinRequest) (cluster.Joined, error) {
	if err := ratelimit.New(a.Store.Queries).Hit(r.Context(), "cluster-join:"+a.clientMeta(r).Addr, cluster.JoinsPerAddress); err != nil {
		return cluster.Joined{}, err
	}
	j, err := a.Cluster.Join(r.Context(), req)
	if err != nil {
		return j, err
	}
	// The admission waits on its workflow; without one nobody could
	// decide it, so a failed start is the request's failure.
	if _, err := a.Admissions.Start(r.Context(), j.AdmissionID, j.ExpiresAt); err != nil {
		return cluster.Joined{}, fmt.Errorf("start the admission: %w", err)
	}
	return j, nil
}

// handoffJSON is the approved joiner's sealed handoff.
type handoffJSON struct {
	// Box is a NaCl anonymous box (crypto_box_seal) to the joiner's key,
	// base64, holding a cluster.Handoff.
	Box string `json:"box"`
}

// follow streams a joiner's progress: each event once, the admission
// whenever its state changes, the sealed handoff once, then ends when the
// admission is settled.
func (a *clusterAPI) follow(w http.ResponseWriter, r *http.Request) {
	id, token := pathParam(r, "id"), r.Header.Get(cluster.TokenHeader)
	ctx := r.Context()
	if err := ratelimit.New(a.Store.Queries).Hit(ctx, "cluster-join-follow:"+a.clientMeta(r).Addr, cluster.FollowsPerAddress); err != nil {
		writeError(w, r, a.Log, err)
		return
	}
	p, err := a.Cluster.Follow(ctx, id, token, 0)
	if err != nil {
		writeError(w, r, a.Log, err)
		return
	}
	rc := http.NewResponseController(w)
	_ = rc.SetWriteDeadline(time.Time{})
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	every := a.FollowEvery
	if every <= 0 {
		every = time.Second
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	var after int64
	state := ""
	send := func(typ string, v any) bool {
		data, _ := json.Marshal(v)
		if writeLogEvent(w, typ, data) != nil {
			return false
		}
		return rc.Flush() == nil
	}
	for {
		for _, e := range p.Events {
			if !send("event", e) {
				return
			}
			after = e.ID
		}
		if p.Admission.State != state {
			state = p.Admission.State
			if !send("admission", p.Admission) {
				return
			}
		}
		if p.Handoff != nil {
			if !send("handoff", handoffJSON{Box: base64.StdEncoding.EncodeToString(p.Handoff)}) {
				return
			}
			if err := a.Cluster.Delivered(context.WithoutCancel(ctx), id); err != nil {
				a.ctxLog(ctx).Warn("cluster: drop the delivered handoff", "admission", id, "err", err)
			}
		}
		if state != cluster.StatePending && (state != cluster.StateApproved || p.Admission.Delivered || p.Handoff != nil) {
			_ = send("end", map[string]string{"state": state})
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if p, err = a.Cluster.Follow(ctx, id, token, after); err != nil {
			return
		}
	}
}

// commandRequest is an operator bridge command (docs/api.md "Operator
// bridge").
type commandRequest struct {
	Command string `json:"command" openapi:"enum=cluster.status|cluster.join-code|cluster.approve|cluster.cancel"`
	// Role is the joiner's role (cluster.join-code).
	Role string `json:"role,omitempty" openapi:"enum=engine|worker"`
	// AdmissionID names the admission (cluster.approve, cluster.cancel).
	AdmissionID string `json:"admission_id,omitempty"`
}

// Commands the operator bridge runs.
var bridgeCommands = []string{"cluster.status", "cluster.join-code", "cluster.approve", "cluster.cancel"}

func (r *commandRequest) validate() error {
	var v cairn.Validation
	switch r.Command {
	case "cluster.join-code":
		if r.Role != cluster.RoleEngine && r.Role != cluster.RoleWorker {
			v.Add("role", "must be engine or worker")
		}
	case "cluster.approve", "cluster.cancel":
		if r.AdmissionID == "" {
			v.Add("admission_id", "is required")
		}
	case "cluster.status":
	default:
		v.Add("command", fmt.Sprintf("must be one of %v", bridgeCommands))
	}
	return v.Err()
}

type commandResultJSON struct {
	Command    string                 `json:"command"`
	Members    []cluster.Member       `json:"members,omitempty"`
	Admissions []cluster.Admission    `json:"admissions,omitempty"`
	JoinCode   *cluster.JoinCode      `json:"join_code,omitempty"`
	Decision   *admissionDecisionJSON `json:"decision,omitempty"`
}

func (a *clusterAPI) command(r *http.Request, req commandRequest) (commandResultJSON, error) {
	ctx, actor := r.Context(), "internal:"+internalCaller(r.Context())
	out := commandResultJSON{Command: req.Command}
	var err error
	switch req.Command {
	case "cluster.status":
		if out.Members, err = a.Cluster.Members(ctx); err == nil {
			out.Admissions, err = a.Cluster.Admissions(ctx)
		}
	case "cluster.join-code":
		var c cluster.JoinCode
		c, err = a.Cluster.IssueJoinCode(ctx, req.Role, actor)
		out.JoinCode = &c
	case "cluster.approve", "cluster.cancel":
		var d admissionDecisionJSON
		d, err = a.decide(ctx, req.AdmissionID, req.Command[len("cluster."):], actor)
		out.Decision = &d
	}
	if err != nil {
		return commandResultJSON{}, err
	}
	return out, nil
}
