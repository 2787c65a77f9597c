package api

import (
	"encoding/base64"
	"net/http"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/internal/internalauth"
)

// The Internal class's keys (internal/internalauth): an administrator
// makes one for a service component (the secret is answered once),
// keeps two active while the component moves to the new one, and
// retires the old.
func (a *serverAdminAPI) internalKeyRoutes() []Route {
	s := a.Server
	return []Route{
		{"GET", "/api/server/internal-keys", AuthAdmin, getAction(s, func(r *http.Request) (internalKeysJSON, error) {
			keys, err := a.internal().List(r.Context())
			return internalKeysJSON{Keys: keys, MaxActive: internalauth.MaxActiveKeys}, err
		}).Summary("The Internal class's HMAC keys, without their secrets."), "List internal HMAC keys"},
		{"POST", "/api/server/internal-keys", AuthAdmin, s.sudo(jsonAction(s, http.StatusCreated, true, func(r *http.Request, _ struct{}) (internalKeyCreatedJSON, error) {
			k, secret, err := a.internal().Create(r.Context())
			if err != nil {
				return internalKeyCreatedJSON{}, err
			}
			return internalKeyCreatedJSON{Key: k, Secret: base64.StdEncoding.EncodeToString(secret)}, nil
		}).Summary("Create an Internal HMAC key and answer its secret (base64) this once; at most two are active (rotation).").
			Errors(internalauth.ECodeKeyLimit)), "Create an internal HMAC key"},
		{"POST", "/api/server/internal-keys/{key_id}/retire", AuthAdmin, s.sudo(jsonAction(s, http.StatusOK, true, func(r *http.Request, _ struct{}) (struct{}, error) {
			return struct{}{}, a.internal().Retire(r.Context(), pathParam(r, "key_id"))
		}).Summary("Retire an Internal HMAC key: requests it signs are refused from now on.").
			Errors(cairn.ECodeNotFound)), "Retire an internal HMAC key"},
	}
}

// internal is the Engine's internalauth service; engine.New always sets
// it, so only an API built without it (a test) meets the fallback.
func (a *serverAdminAPI) internal() *internalauth.Service {
	if a.Internal == nil {
		return internalauth.New(a.Store.Queries, a.Cipher, a.Now)
	}
	return a.Internal
}

type internalKeysJSON struct {
	Keys      []internalauth.Key `json:"keys"`
	MaxActive int                `json:"max_active"`
}

type internalKeyCreatedJSON struct {
	internalauth.Key
	// Secret is the HMAC key (base64), answered once.
	Secret string `json:"secret"`
}
