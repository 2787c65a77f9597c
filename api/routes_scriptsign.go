package api

import (
	"context"
	"net/http"
	"time"

	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/internal/scriptsign"
)

// scriptSignRoutes are the administrators' view of the script-signing key
// and its rotation (docs/api.md "Script signing").
func (s *Server) scriptSignRoutes() []Route {
	return []Route{
		{"GET", "/api/server/script-signing", AuthAdmin, getAction(s, func(r *http.Request) (scriptSigningJSON, error) {
			return s.scriptSigningStatus(r.Context())
		}), "Get the script-signing status"},
		{"POST", "/api/server/script-signing/rotate", AuthAdmin, jsonAction(s, http.StatusOK, true, func(r *http.Request, req scriptKeyRotateRequest) (scriptSigningJSON, error) {
			if err := s.Signer.Rotate(r.Context(), req.Force); err != nil {
				return scriptSigningJSON{}, err
			}
			return s.scriptSigningStatus(r.Context())
		}).Errors(scriptsign.ECodeRotationPending), "Rotate the script-signing key"},
	}
}

// scriptKeyRotateRequest is the optional rotate body: force rotates even while
// some agent lacks the active key (a key believed compromised).
type scriptKeyRotateRequest struct {
	Force bool `json:"force"`
}

type scriptKeyJSON struct {
	KeyID     string    `json:"key_id"`
	PublicKey string    `json:"public_key"`
	State     string    `json:"state"`
	CreatedAt time.Time `json:"created_at"`
}

type scriptSigningJSON struct {
	Keys            []scriptKeyJSON `json:"keys"`
	AgentsOnCurrent int64           `json:"agents_on_current"`
	AgentsTotal     int64           `json:"agents_total"`
}

func (s *Server) scriptSigningStatus(ctx context.Context) (scriptSigningJSON, error) {
	st, err := s.Signer.Status(ctx)
	if err != nil {
		return scriptSigningJSON{}, err
	}
	out := scriptSigningJSON{Keys: make([]scriptKeyJSON, len(st.Keys)), AgentsOnCurrent: st.AgentsOnCurrent, AgentsTotal: st.AgentsTotal}
	for i, k := range st.Keys {
		out.Keys[i] = scriptKeyJSON{KeyID: k.KeyID, PublicKey: k.PublicKey, State: k.State, CreatedAt: k.CreatedAt.UTC()}
	}
	return out, nil
}

// scriptTrust is the trust material for an agent-facing answer. A failure
// only logs: the agent keeps the keys it has and gets them next time.
func (s *Server) scriptTrust(ctx context.Context) *proto.ScriptTrust {
	if s.Signer == nil {
		return nil
	}
	t, err := s.Signer.Trust(ctx)
	if err != nil {
		s.ctxLog(ctx).Warn("script-signing keys unavailable for an agent answer", "err", err)
		return nil
	}
	return t
}
