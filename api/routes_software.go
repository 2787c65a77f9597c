package api

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/google/uuid"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/internal/automation"
	"github.com/cairn-rmm/cairn/internal/devices"
	"github.com/cairn-rmm/cairn/internal/devicetrust"
	"github.com/cairn-rmm/cairn/internal/software"
	"github.com/cairn-rmm/cairn/workflows"
)

// softwareRoutes are the software audit, icons and the global software
// rules (docs/api.md "Software audit").
func (s *Server) softwareRoutes() []Route {
	svc := software.New(s.Store)
	return []Route{
		{"GET", "/api/software/audit", AuthToken, getAction(s, func(r *http.Request) (software.AuditPage, error) {
			q := software.AuditQuery{Q: r.URL.Query().Get("q"), Sort: r.URL.Query().Get("sort")}
			var err error
			if q.Limit, err = queryInt(r, "limit", software.DefaultAuditLimit, 1, software.MaxAuditLimit); err != nil {
				return software.AuditPage{}, err
			}
			if q.Offset, err = queryInt(r, "offset", 0, 0, 1<<30); err != nil {
				return software.AuditPage{}, err
			}
			return svc.Audit(r.Context(), principal(r.Context()).SiteScope(), q)
		}).Query(queryString("q", "a search in software names"), queryString("sort", "a column, - first for descending"), queryInteger("limit", "rows per page"), queryInteger("offset", "rows to skip")), "Audit installed software"},
		{"GET", "/api/software/rules", AuthToken, getAction(s, func(r *http.Request) (software.Rules, error) {
			return svc.ListRules(r.Context())
		}), "List software rules"},
		{"GET", "/api/device/software/icon/{icon_hash}", AuthToken, raw(s.softwareIcon(svc)).Stream(http.StatusOK, "image/*").Also(http.StatusNotModified, nil).Errors(cairn.ECodeNotFound), "Get a software icon"},
		{"POST", "/api/device/software/{hostname}/icon-override", AuthToken, jsonAction(s, http.StatusOK, false,
			func(r *http.Request, req iconOverrideReq) (iconOverrideJSON, error) {
				rule, dev, err := svc.SetIconOverride(r.Context(), softwareActor(r), req.target(r), software.IconOverride{
					Icon: req.Icon, DisplayIcon: req.DisplayIcon, ClearIcon: req.ClearIcon, Remove: req.Remove})
				if err != nil {
					return iconOverrideJSON{}, err
				}
				return iconOverrideJSON{Rule: rule, Refresh: s.requestSoftwareRefresh(r, dev.Hostname)}, nil
			}).Errors(cairn.ECodeNotFound), "Override a software icon"},
		{"POST", "/api/device/software/{hostname}/uninstall-override", AuthToken, jsonAction(s, http.StatusOK, false,
			func(r *http.Request, req uninstallOverrideReq) (uninstallOverrideJSON, error) {
				rule, err := svc.SetUninstallOverride(r.Context(), softwareActor(r), req.target(r), software.UninstallOverride{
					Executable: req.Executable, Arguments: req.Arguments, Remove: req.Remove})
				if err != nil {
					return uninstallOverrideJSON{}, err
				}
				return uninstallOverrideJSON{Rule: rule, Removed: req.Remove}, nil
			}).Errors(cairn.ECodeNotFound, cairn.ECodeForbidden), "Override a software uninstall command"},
		{"POST", "/api/device/software/{hostname}/uninstall-block", AuthToken, jsonAction(s, http.StatusOK, false,
			func(r *http.Request, req uninstallBlockReq) (uninstallBlockJSON, error) {
				rule, err := svc.Block(r.Context(), softwareActor(r), req.target(r), req.Reason)
				if err != nil {
					return uninstallBlockJSON{}, err
				}
				return uninstallBlockJSON{Rule: rule}, nil
			}).Errors(cairn.ECodeNotFound), "Block uninstalling software"},
		{"POST", "/api/device/software/{hostname}/uninstall-unblock", AuthToken, jsonAction(s, http.StatusOK, false,
			func(r *http.Request, req softwareRowReq) (uninstallUnblockJSON, error) {
				removed, err := svc.Unblock(r.Context(), softwareActor(r), req.target(r))
				if err != nil {
					return uninstallUnblockJSON{}, err
				}
				return uninstallUnblockJSON{Removed: removed}, nil
			}).Errors(cairn.ECodeNotFound, cairn.ECodeForbidden), "Unblock uninstalling software"},
		{"POST", "/api/device/software/{hostname}/uninstall", AuthToken, jsonAction(s, http.StatusAccepted, false,
			func(r *http.Request, req softwareRowReq) (uninstallJSON, error) {
				return s.softwareUninstall(r, svc, req)
			}).
			Errors(cairn.ECodeNotFound, cairn.ECodeAgentSocketMissing, devicetrust.ECodeDeviceQuarantined, devicetrust.ECodeDeviceRevoked,
				cairn.ECodeAgentTooOld, software.ECodeUninstallBlocked, ECodeTemporalUnavailable, cairn.ECodeUnavailable), "Uninstall software from a device"},
		{"GET", "/api/agent/software-management/overrides", AuthDevice, getAction(s, func(r *http.Request) (software.AgentOverrides, error) {
			return svc.AgentRules(r.Context())
		}), "Agent: get the software overrides"},
	}
}

// uninstallJSON is an uninstall on its way: a job run (follow it at URL,
// GET /api/scripts/quick_run/<run_id>), after which the device's software
// is read again.
type uninstallJSON struct {
	RunID   cairn.RunID `json:"run_id"`
	URL     string      `json:"url"`
	Name    string      `json:"name"`
	Version string      `json:"version"`
	// Override: an uninstall override's command runs instead of the
	// endpoint's own uninstaller.
	Override bool   `json:"override"`
	Language string `json:"language"`
}

// uninstallRefreshWait is how long the refresh after an uninstall stays
// authorised: the uninstall's own bound, the job run's grace for reaching
// the agent, and the refresh's.
const uninstallRefreshWait = software.UninstallTimeoutSeconds*time.Second + 2*time.Minute +
	workflows.DefaultOperationTimeout + 15*time.Minute

// softwareUninstall checks the device (in scope, trusted, connected, able
// to run scripts) and the row (reported by the device, not blocked), signs
// the uninstall as a quick job for this device (software.PlanUninstall:
// an override's command or the platform's uninstall script) and starts
// the workflow that runs it and then refreshes the device's software.
func (s *Server) softwareUninstall(r *http.Request, svc *software.Service, req softwareRowReq) (uninstallJSON, error) {
	ctx, p := r.Context(), principal(r.Context())
	t, err := s.Devices.OperationTarget(ctx, p.SiteScope(), pathParam(r, "hostname"))
	if err != nil {
		return uninstallJSON{}, err
	}
	job, err := svc.PlanUninstall(ctx, softwareActor(r), req.target(r))
	if err != nil {
		return uninstallJSON{}, err
	}
	if !t.SocketLive {
		return uninstallJSON{}, cairn.Errorf(cairn.ECodeAgentSocketMissing, "the agent of %s has no realtime connection", t.Hostname)
	}
	if err := t.Require(proto.CapScripts); err != nil {
		return uninstallJSON{}, err
	}
	run, err := s.Automation.CreateRun(ctx, automation.RunSpec{Kind: automation.RunSoftwareUninstall, Trigger: automation.TriggerManual,
		Language: job.Language, Body: job.Body, Parameters: job.Parameters, TimeoutSeconds: job.TimeoutSeconds,
		RequestedBy: p.Username, Targets: []devices.OperationTarget{t}})
	if err != nil {
		return uninstallJSON{}, err
	}
	refresh, err := s.Operations.Granted(ctx, workflows.OperationInput{OperationID: cairn.OperationID(uuid.NewString()), Target: t,
		Type: proto.EventSoftwareRefresh, Payload: []byte("{}"), Kind: "software_refresh",
		Summary: "Refresh software inventory (after " + job.Summary() + ")", Actor: p.Username}, uninstallRefreshWait)
	if err == nil {
		err = s.Runs.StartUninstall(ctx, workflows.SoftwareUninstallInput{RunID: run.ID, Refresh: refresh})
	}
	if err != nil {
		// Keep no run that would stay pending with nothing to execute it.
		if derr := s.Automation.DiscardRun(context.WithoutCancel(ctx), run.ID); derr != nil {
			s.reqLog(r).Error("discard an uninstall run that did not start", "run_id", run.ID, "err", derr)
		}
		return uninstallJSON{}, err
	}
	return uninstallJSON{RunID: run.ID, URL: "/api/scripts/quick_run/" + string(run.ID), Name: job.Name, Version: job.Version,
		Override: job.Command != "", Language: job.Language}, nil
}

// softwareRowReq names the software row of the device in the path.
type softwareRowReq struct {
	Name    string  `json:"name"`
	Version *string `json:"version"`
}

func (q softwareRowReq) target(r *http.Request) software.Target {
	if e := auditFrom(r); e != nil {
		// The audit trail says which software the rule is about.
		e.Target += " software=" + strconv.Quote(q.Name)
		if q.Version != nil {
			e.Target += " version=" + strconv.Quote(*q.Version)
		}
	}
	return software.Target{Hostname: pathParam(r, "hostname"), Name: q.Name, Version: q.Version}
}

type iconOverrideReq struct {
	softwareRowReq
	// Icon is the image's bytes (base64 in JSON).
	Icon        []byte `json:"icon"`
	DisplayIcon string `json:"display_icon"`
	ClearIcon   bool   `json:"clear_icon"`
	Remove      bool   `json:"remove"`
}

type uninstallOverrideReq struct {
	softwareRowReq
	Executable string `json:"executable"`
	Arguments  string `json:"arguments"`
	Remove     bool   `json:"remove"`
}

type uninstallBlockReq struct {
	softwareRowReq
	Reason string `json:"reason"`
}

func softwareActor(r *http.Request) software.Actor {
	p := principal(r.Context())
	return software.Actor{Username: p.Username, Admin: p.IsAdmin(), Scope: p.SiteScope()}
}

// requestSoftwareRefresh starts a software refresh of the device through
// the command path without waiting for it: the rule is saved whatever the
// agent does, and the refresh's outcome lands in the device's activity.
// A device that cannot take it now says why instead.
func (s *Server) requestSoftwareRefresh(r *http.Request, hostname string) refreshRequestJSON {
	ctx, p := r.Context(), principal(r.Context())
	t, err := s.Devices.OperationTarget(ctx, p.SiteScope(), hostname)
	if err == nil && !t.SocketLive {
		err = cairn.Errorf(cairn.ECodeAgentSocketMissing, "the agent of %s has no realtime connection", t.Hostname)
	}
	if err == nil {
		err = t.Require(proto.CapInventoryRefresh)
	}
	if err == nil {
		id := uuid.NewString()
		_, err = s.Operations.Start(ctx, workflows.OperationInput{OperationID: cairn.OperationID(id), Target: t, Type: proto.EventSoftwareRefresh,
			Payload: []byte("{}"), Kind: "software_refresh", Summary: "Refresh software inventory (icon override)", Actor: p.Username})
		if err == nil {
			return refreshRequestJSON{Requested: true, OperationID: cairn.OperationID(id)}
		}
	}
	code := cairn.ErrorCode(err)
	if code == cairn.ECodeInternal {
		s.reqLog(r).Error("software refresh after an icon override", "hostname", hostname, "err", err)
	}
	return refreshRequestJSON{Requested: false, Error: code}
}

// softwareIcon serves an icon. Icons are content-addressed, so they are
// cached for a year; every icon is served with a sandboxing CSP and
// nosniff, so even an SVG opened directly can run nothing.
func (s *Server) softwareIcon(svc *software.Service) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		icon, err := svc.IconByHash(r.Context(), pathParam(r, "icon_hash"))
		if err != nil {
			writeError(w, r, s.Log, err)
			return
		}
		h := w.Header()
		etag := `"` + icon.Hash + `"`
		h.Set("Content-Type", icon.ContentType)
		h.Set("Cache-Control", "private, max-age=31536000, immutable")
		h.Set("ETag", etag)
		h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; sandbox")
		h.Set("Content-Disposition", "inline; filename=\"icon\"")
		if r.Header.Get("If-None-Match") == etag {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		h.Set("Content-Length", strconv.Itoa(len(icon.Data)))
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(icon.Data)
	}
}

type iconOverrideJSON struct {
	Rule    software.IconRule  `json:"rule"`
	Refresh refreshRequestJSON `json:"refresh"`
}

// refreshRequestJSON says whether the device was asked for a software
// refresh: with the operation when it was, with the error code when not.
type refreshRequestJSON struct {
	Requested   bool              `json:"requested"`
	OperationID cairn.OperationID `json:"operation_id,omitempty"`
	Error       string            `json:"error,omitempty"`
}

type uninstallOverrideJSON struct {
	Rule    software.UninstallOverrideRule `json:"rule"`
	Removed bool                           `json:"removed"`
}

type uninstallBlockJSON struct {
	Rule software.BlockRule `json:"rule"`
}

// uninstallUnblockJSON is the blocks lifted (one per matching version).
type uninstallUnblockJSON struct {
	Removed []software.BlockRule `json:"removed"`
}
