package api

import (
	"context"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/devicetrust"
	"github.com/cairn-rmm/cairn/internal/enrollment"
	"github.com/cairn-rmm/cairn/workflowclient"
	"github.com/cairn-rmm/cairn/workflows"
)

// EnrollmentArea are the routes of Enrollment, over the services only they use.
type EnrollmentArea struct {
	// Enrollment is enrollment codes, requests and approvals.
	Enrollment *enrollment.Service
	// Approvals starts and signals enrollment approval workflows.
	Approvals workflowclient.EnrollmentStarter
}

type enrollmentAPI struct {
	*Server
	EnrollmentArea
}

func (d EnrollmentArea) routes(s *Server) []Route {
	a := &enrollmentAPI{Server: s, EnrollmentArea: d}
	return slices.Concat(a.enrollmentRoutes(), a.agentEnrollRoutes())
}

// decisionWait bounds how long approve/deny waits for the approval
// workflow to record the decision before answering 202 with the request
// still pending.
const decisionWait = 10 * time.Second

// enrollmentRoutes are the operator side: codes and approvals, scoped to
// the caller's sites.
func (s *enrollmentAPI) enrollmentRoutes() []Route {
	return []Route{
		{"POST", "/api/admin/enrollment-codes", AuthToken, jsonAction(s.Server, http.StatusCreated, false, func(r *http.Request, req codeCreateRequest) (enrollment.Code, error) {
			p := principal(r.Context())
			return s.Enrollment.CreateCode(r.Context(), p.SiteScope(), enrollment.CodeInput{
				SiteID: req.SiteID, ExpiresInSeconds: req.ExpiresInSeconds, MaxUses: req.MaxUses,
			}, p.Username)
		}).Errors(cairn.ECodeNotFound, cairn.ECodeForbidden), "Create an enrollment code"},
		{"GET", "/api/admin/enrollment-codes", AuthToken, getAction(s.Server, func(r *http.Request) (enrollmentCodeListJSON, error) {
			var site *int64
			if v := r.URL.Query().Get("site_id"); v != "" {
				id, err := strconv.ParseInt(v, 10, 64)
				if err != nil || id <= 0 {
					return enrollmentCodeListJSON{}, cairn.Invalid("site_id", "must be a positive integer")
				}
				site = &id
			}
			codes, err := s.Enrollment.ListCodes(r.Context(), principal(r.Context()).SiteScope(), site)
			return enrollmentCodeListJSON{Codes: codes}, err
		}).Query(queryInteger("site_id", "only this site's codes")), "List enrollment codes"},
		{"DELETE", "/api/admin/enrollment-codes/{code_id}", AuthToken, getAction(s.Server, func(r *http.Request) (deletedIDJSON, error) {
			id, err := pathID(r, "code_id")
			if err != nil {
				return deletedIDJSON{}, err
			}
			return deletedIDJSON{Deleted: id}, s.Enrollment.DeleteCode(r.Context(), principal(r.Context()).SiteScope(), id)
		}).Errors(cairn.ECodeNotFound), "Delete an enrollment code"},
		{"POST", "/api/admin/enrollment-codes/{code_id}/rotate", AuthToken, jsonAction(s.Server, http.StatusOK, true, func(r *http.Request, _ struct{}) (enrollment.Code, error) {
			id, err := pathID(r, "code_id")
			if err != nil {
				return enrollment.Code{}, err
			}
			return s.Enrollment.RotateCode(r.Context(), principal(r.Context()).SiteScope(), id)
		}).Errors(cairn.ECodeNotFound), "Rotate an enrollment code"},
		{"GET", "/api/admin/device-approvals", AuthToken, getAction(s.Server, func(r *http.Request) (approvalListJSON, error) {
			list, err := s.Enrollment.ListApprovals(r.Context(), principal(r.Context()).SiteScope(), r.URL.Query().Get("status"))
			return approvalListJSON{Approvals: list}, err
		}).Query(queryString("status", "only requests in this status")), "List device approvals"},
		{"POST", "/api/admin/device-approvals/{approval_id}/approve", AuthToken, s.decideApproval(workflows.DecisionApprove).Errors(cairn.ECodeNotFound, cairn.ECodeConflict, ECodeTemporalUnavailable, cairn.ECodeUnavailable), "Approve a device"},
		{"POST", "/api/admin/device-approvals/{approval_id}/deny", AuthToken, s.decideApproval(workflows.DecisionDeny).Errors(cairn.ECodeNotFound, cairn.ECodeConflict, ECodeTemporalUnavailable, cairn.ECodeUnavailable), "Deny a device"},
	}
}

type codeCreateRequest struct {
	SiteID           cairn.SiteID `json:"site_id"`
	ExpiresInSeconds *int64       `json:"expires_in_seconds"`
	MaxUses          *int64       `json:"max_uses"`
}

// decideApproval hands the decision to the request's approval workflow
// (its decide update) and answers once the workflow reports the recorded
// outcome: 200 with the decided request, or 202 while it is still pending
// after decisionWait (the decision is then kept by the workflow).
func (s *enrollmentAPI) decideApproval(decision string) Endpoint {
	return raw(func(w http.ResponseWriter, r *http.Request) {
		var body struct{}
		if err := decodeJSON(w, r, &body, true); err != nil {
			writeError(w, r, s.Log, err)
			return
		}
		ctx, p, id := r.Context(), principal(r.Context()), chi.URLParam(r, "approval_id")
		a, err := s.Enrollment.PendingInScope(ctx, p.SiteScope(), id)
		if err == nil && decision == workflows.DecisionApprove {
			err = s.Enrollment.CheckApprover(ctx, a, p.IsAdmin())
		}
		if err != nil {
			writeError(w, r, s.Log, err)
			return
		}
		wctx, cancel := context.WithTimeout(ctx, decisionWait)
		defer cancel()
		_, err = s.Approvals.DecideAndWait(wctx, id, a.ExpiresAt, workflows.EnrollmentDecision{Decision: decision, Actor: p.Username, Admin: p.IsAdmin()})
		if err != nil && (wctx.Err() == nil || ctx.Err() != nil) {
			writeError(w, r, s.Log, err)
			return
		}
		// The outcome is recorded (or the wait ran out): one read for the
		// request's view.
		if a, err = s.Enrollment.Get(ctx, id); err != nil {
			writeError(w, r, s.Log, err)
			return
		}
		status := http.StatusOK
		if a.Status == proto.ApprovalPending {
			status = http.StatusAccepted
		}
		writeJSON(w, status, enrollment.ApprovalView(a, ""))
	}).In(struct{}{}, true).Out(http.StatusOK, enrollment.Approval{}).Also(http.StatusAccepted, enrollment.Approval{})
}

// enrollPollErrors: a poll presents a proof without an access token
// (unboundProof), names an approval that may be unknown or spent, and
// mints the device's tokens with keys the cipher seals.
var enrollPollErrors = []string{cairn.ECodeInvalidDPoPProof, cairn.ECodeRateLimited, cairn.ECodeNotFound,
	cairn.ECodeConflict, cairn.ECodeAegisLocked, db.ECodeServiceUnavailable}

// refreshErrors: why devicetrust.Tokens.Refresh refuses a refresh token,
// and the cipher locked (the signing key is sealed).
var refreshErrors = []string{devicetrust.ECodeInvalidRefreshToken, devicetrust.ECodeTokenRevoked, devicetrust.ECodeTokenExpired,
	devicetrust.ECodeFingerprint, devicetrust.ECodeDeviceRevoked, devicetrust.ECodeDeviceQuarantined,
	devicetrust.ECodeDevicePurged, devicetrust.ECodeDeviceNotFound, devicetrust.ECodeDeviceCloned, cairn.ECodeRateLimited, cairn.ECodeAegisLocked}

// agentEnrollRoutes are the agent side: nonce, request, poll and refresh.
func (s *enrollmentAPI) agentEnrollRoutes() []Route {
	return []Route{
		{"POST", proto.PathEnrollNonce, AuthNone, jsonAction(s.Server, http.StatusOK, true, func(r *http.Request, _ struct{}) (proto.EnrollNonce, error) {
			return s.Enrollment.Nonce(r.Context())
		}).Errors(cairn.ECodeAegisLocked, db.ECodeServiceUnavailable), "Get an enrollment nonce"},
		{"POST", proto.PathEnrollRequest, AuthNone, jsonAction(s.Server, http.StatusAccepted, false, func(r *http.Request, req proto.EnrollRequest) (proto.EnrollResponse, error) {
			// Agents send a proof here only so that one signing for an
			// origin this Engine does not serve is refused before anyone
			// approves a request its polls could never collect.
			if proof := r.Header.Get(proto.HeaderDPoP); proof != "" {
				if err := devicetrust.CheckHTU(proof, devicetrust.RequestURLs(s.agentOrigins, r)); err != nil {
					return proto.EnrollResponse{}, err
				}
			}
			return s.Enrollment.Request(r.Context(), req, s.clientMeta(r).Addr)
		}).Errors(cairn.ECodeInvalidDPoPProof, cairn.ECodeRateLimited, ECodeTemporalUnavailable, cairn.ECodeUnavailable, db.ECodeServiceUnavailable), "Request enrollment"},
		{"POST", proto.PathEnrollPoll, AuthNone, jsonAction(s.Server, http.StatusOK, false, func(r *http.Request, req proto.EnrollPoll) (proto.EnrollPollResponse, error) {
			if req.ApprovalID == "" {
				return proto.EnrollPollResponse{}, cairn.Invalid("approval_id", "is required")
			}
			jkt, err := s.unboundProof(r)
			if err != nil {
				return proto.EnrollPollResponse{}, err
			}
			resp, done, err := s.Enrollment.Poll(r.Context(), s.DeviceTokens, req.ApprovalID, jkt)
			if err == nil && done != nil {
				s.enrolled(r.Context(), *done)
				resp.ScriptSigning = s.scriptTrust(r.Context())
			}
			return resp, err
		}).Errors(enrollPollErrors...), "Poll an enrollment request"},
		{"POST", proto.PathTokenRefresh, AuthRefresh, jsonAction(s.Server, http.StatusOK, false, func(r *http.Request, req proto.RefreshRequest) (proto.RefreshResponse, error) {
			if req.RefreshToken == "" {
				return proto.RefreshResponse{}, cairn.Invalid("refresh_token", "is required")
			}
			guid, issued, err := s.DeviceTokens.Refresh(r.Context(), req.RefreshToken, req.Fingerprint, req.BootID, proofJKT(r.Context()))
			if err != nil {
				return proto.RefreshResponse{}, err
			}
			addLogAttrs(r, "guid", guid)
			return proto.RefreshResponse{GUID: guid, Tokens: s.DeviceTokens.Wire(issued), ScriptSigning: s.scriptTrust(r.Context())}, nil
		}).Errors(refreshErrors...), "Refresh the device's tokens"},
	}
}

func pathID(r *http.Request, name string) (int64, error) {
	id, err := strconv.ParseInt(chi.URLParam(r, name), 10, 64)
	if err != nil || id <= 0 {
		return 0, cairn.Invalid(name, "must be a positive integer")
	}
	return id, nil
}

type enrollmentCodeListJSON struct {
	Codes []enrollment.Code `json:"codes"`
}

// approvalListJSON is newest first, at most 500.
type approvalListJSON struct {
	Approvals []enrollment.Approval `json:"approvals"`
}
