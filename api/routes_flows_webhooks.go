package api

import (
	"errors"
	"io"
	"net/http"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/internal/flows"
)

// webhookRoutes are a flow's inbound webhooks: operators manage them
// under the flow, outside systems POST signed requests to their path
// (docs/api.md "Workflow webhooks").
func (s *flowsAPI) webhookRoutes() []Route {
	const hooks = "/api/workflows/{id}/webhooks"
	const one = hooks + "/{webhook_id}"
	return []Route{
		{"GET", hooks, AuthToken, getAction(s.Server, func(r *http.Request) (flowWebhooksJSON, error) {
			id, err := flowID(r)
			if err != nil {
				return flowWebhooksJSON{}, err
			}
			list, err := s.Webhooks.List(r.Context(), principal(r.Context()).SiteScope(), id)
			return flowWebhooksJSON{Webhooks: list}, err
		}).Errors(cairn.ECodeNotFound), "List a workflow's webhooks"},
		{"POST", hooks, AuthToken, jsonAction(s.Server, http.StatusCreated, false, func(r *http.Request, req flows.WebhookInput) (flows.WebhookWithSecret, error) {
			id, err := flowID(r)
			if err != nil {
				return flows.WebhookWithSecret{}, err
			}
			return s.Webhooks.Create(r.Context(), editor(r), id, req)
		}).Errors(cairn.ECodeNotFound, cairn.ECodeAegisLocked).
			Summary("The answer carries the webhook's secret; no later answer does (rotate to get a new one)."), "Create a workflow webhook"},
		{"POST", one + "/rotate", AuthToken, jsonAction(s.Server, http.StatusOK, true, func(r *http.Request, _ struct{}) (flows.WebhookWithSecret, error) {
			id, err := flowID(r)
			if err != nil {
				return flows.WebhookWithSecret{}, err
			}
			return s.Webhooks.Rotate(r.Context(), principal(r.Context()).SiteScope(), id, pathParam(r, "webhook_id"))
		}).Errors(cairn.ECodeNotFound, cairn.ECodeAegisLocked).
			Summary("The old secret stops verifying at once; the answer carries the new one, shown this once."), "Rotate a workflow webhook's secret"},
		{"DELETE", one, AuthToken, jsonAction(s.Server, http.StatusNoContent, true, func(r *http.Request, _ struct{}) (struct{}, error) {
			id, err := flowID(r)
			if err != nil {
				return struct{}{}, err
			}
			return struct{}{}, s.Webhooks.Delete(r.Context(), principal(r.Context()).SiteScope(), id, pathParam(r, "webhook_id"))
		}).Errors(cairn.ECodeNotFound), "Delete a workflow webhook"},
		{"POST", "/api/workflows/webhooks/{webhook_id}", AuthWebhook, raw(s.triggerWebhook).In(map[string]any{}, false).
			Out(http.StatusAccepted, jobRunIDJSON{}).
			Errors(flows.ECodeWebhookSignatureInvalid, flows.ECodeWebhookSignatureStale, flows.ECodeWebhookReplayed,
				cairn.ECodeRateLimited, cairn.ECodeValidation, cairn.ECodeTooLarge, cairn.ECodeAegisLocked,
				ECodeTemporalUnavailable, cairn.ECodeUnavailable).
			Summary("Signed with the webhook's secret as Internal requests are signed, its ID as X-Cairn-Key-Id; accepted once within 5 minutes of its timestamp. The body (a JSON object up to 64 KiB) is the run's input; its optional device_guids replace the webhook's devices."),
			"Start a workflow from its webhook"},
	}
}

// triggerWebhook starts a flow from a signed webhook request.
func (s *flowsAPI) triggerWebhook(w http.ResponseWriter, r *http.Request) {
	id := pathParam(r, "webhook_id")
	if e := auditFrom(r); e != nil {
		e.Username, e.Role = "webhook:"+id, "webhook"
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, flows.MaxWebhookBody))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeError(w, r, s.Log, cairn.Errorf(cairn.ECodeTooLarge, "the body is larger than %d bytes", flows.MaxWebhookBody))
			return
		}
		writeError(w, r, s.Log, cairn.Invalid("body", "the body could not be read"))
		return
	}
	runID, err := s.Webhooks.Trigger(r.Context(), id, r.Method, r.URL.RequestURI(), body, r.Header)
	if err != nil {
		writeError(w, r, s.Log, err)
		return
	}
	addLogAttrs(r, "webhook_id", id, "run_id", runID)
	writeJSON(w, http.StatusAccepted, jobRunIDJSON{RunID: runID})
}

// nodeRoutes are a flow's steps one at a time ("nodes"): list, add,
// replace, remove, each saved as a whole-flow update would be.
func (s *flowsAPI) nodeRoutes() []Route {
	const nodes = "/api/workflows/{id}/nodes"
	const one = nodes + "/{node_id}"
	edit := func(r *http.Request, change func([]flows.Step) ([]flows.Step, error)) (flows.Flow, error) {
		id, err := flowID(r)
		if err != nil {
			return flows.Flow{}, err
		}
		return s.Flows.EditSteps(r.Context(), editor(r), id, change)
	}
	errs := []string{cairn.ECodeNotFound, cairn.ECodeForbidden, cairn.ECodeDependantsExist}
	return []Route{
		{"GET", nodes, AuthToken, getAction(s.Server, func(r *http.Request) (flowNodesJSON, error) {
			id, err := flowID(r)
			if err != nil {
				return flowNodesJSON{}, err
			}
			f, err := s.Flows.Get(r.Context(), id)
			return flowNodesJSON{Nodes: f.Steps}, err
		}).Errors(cairn.ECodeNotFound), "List a workflow's nodes"},
		{"POST", nodes, AuthToken, jsonAction(s.Server, http.StatusCreated, false, func(r *http.Request, req flowNodeRequest) (flows.Flow, error) {
			return edit(r, func(steps []flows.Step) ([]flows.Step, error) { return flows.InsertStep(steps, req.Step, req.Position) })
		}).Errors(errs...).Summary("position is the node's index after the insert (omitted: last)."), "Add a node to a workflow"},
		{"PUT", one, AuthToken, jsonAction(s.Server, http.StatusOK, false, func(r *http.Request, req flows.Step) (flows.Flow, error) {
			return edit(r, func(steps []flows.Step) ([]flows.Step, error) {
				return flows.ReplaceStep(steps, pathParam(r, "node_id"), req)
			})
		}).Errors(errs...), "Replace a workflow node"},
		{"DELETE", one, AuthToken, jsonAction(s.Server, http.StatusOK, true, func(r *http.Request, _ struct{}) (flows.Flow, error) {
			return edit(r, func(steps []flows.Step) ([]flows.Step, error) {
				return flows.RemoveStep(steps, pathParam(r, "node_id"))
			})
		}).Errors(errs...), "Remove a workflow node"},
	}
}

type flowWebhooksJSON struct {
	Webhooks []flows.Webhook `json:"webhooks"`
}

type flowNodesJSON struct {
	Nodes []flows.Step `json:"nodes"`
}

type flowNodeRequest struct {
	flows.Step
	// Position is the new node's index (nil: after the last).
	Position *int `json:"position"`
}
