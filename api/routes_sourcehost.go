package api

import (
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/internal/sourcehost"
)

// SourceHostArea are the routes of SourceHost, over the services only they use.
type SourceHostArea struct {
	// SourceHost is the source-hosting token and branch-head service.
	SourceHost *sourcehost.Service
}

type sourceHostAPI struct {
	*Server
	SourceHostArea
}

func (d SourceHostArea) routes(s *Server) []Route {
	a := &sourceHostAPI{Server: s, SourceHostArea: d}
	return slices.Concat(a.sourceHostRoutes())
}

// headerGitHubToken lets a caller lend its own source-host token to a
// current_hash call when the Engine has none stored (SPEC rule 7).
const headerGitHubToken = "X-GitHub-Token"

func (s *sourceHostAPI) sourceHostRoutes() []Route {
	return []Route{
		{"GET", "/api/github/token", AuthAdmin, getAction(s.Server, func(r *http.Request) (tokenStatusJSON, error) {
			st, err := s.SourceHost.Status(r.Context())
			return toTokenStatusJSON(st), err
		}), "Get the GitHub token status"},
		{"POST", "/api/github/token", AuthAdmin, jsonAction(s.Server, http.StatusOK, false, func(r *http.Request, req tokenRequest) (tokenStatusJSON, error) {
			if err := s.SourceHost.SetToken(r.Context(), req.token, principal(r.Context()).Username); err != nil {
				return tokenStatusJSON{}, err
			}
			st, err := s.SourceHost.Status(r.Context())
			return toTokenStatusJSON(st), err
		}).Errors(cairn.ECodeUnavailable), "Set the GitHub token"},
		// SPEC: "Device or Token": agents ask too (script payloads).
		{"GET", "/api/repo/current_hash", AuthDeviceOrToken, getAction(s.Server, func(r *http.Request) (currentHashJSON, error) {
			q, err := hashQuery(r)
			if err != nil {
				return currentHashJSON{}, err
			}
			h, err := s.SourceHost.CurrentHash(r.Context(), q)
			return currentHashJSON{Repo: h.Repo, Branch: h.Branch, Hash: h.Hash, FetchedAt: h.FetchedAt, Cached: h.Cached}, err
		}).Query(queryString("repo", "owner/name"), queryString("branch", "the branch"), queryInteger("ttl", "seconds a cached head may be old"), queryString("refresh", "force: ask upstream even with a cached head")).Errors(cairn.ECodeNotFound, cairn.ECodeRateLimited, cairn.ECodeUnavailable), "Get a repository branch's current hash"},
	}
}

// hashQuery reads the query string; every bad parameter is reported at once
// by sourcehost.CheckHashQuery (a bad ttl is passed on as -1 for that).
func hashQuery(r *http.Request) (sourcehost.HashQuery, error) {
	v := r.URL.Query()
	q := sourcehost.HashQuery{Repo: v.Get("repo"), Branch: v.Get("branch"), TTL: sourcehost.DefaultTTL,
		HeaderToken: r.Header.Get(headerGitHubToken)}
	if raw := v.Get("ttl"); raw != "" {
		n, err := strconv.Atoi(raw)
		if err != nil {
			n = -1
		}
		q.TTL = time.Duration(n) * time.Second
	}
	switch v.Get("refresh") {
	case "":
	case "force":
		q.Force = true
	default:
		err := sourcehost.CheckHashQuery(q)
		fields := map[string]string{"refresh": "must be force or absent"}
		if e, ok := err.(*cairn.Error); ok {
			for k, p := range e.Fields {
				fields[k] = p
			}
		}
		return q, &cairn.Error{Code: cairn.ECodeValidation, Message: "request is invalid", Fields: fields}
	}
	return q, sourcehost.CheckHashQuery(q)
}

type currentHashJSON struct {
	Repo      string    `json:"repo"`
	Branch    string    `json:"branch"`
	Hash      string    `json:"hash"`
	FetchedAt time.Time `json:"fetched_at"`
	Cached    bool      `json:"cached"`
}

type rateLimitJSON struct {
	Limit     int       `json:"limit"`
	Remaining int       `json:"remaining"`
	ResetAt   time.Time `json:"reset_at"`
}

type tokenStatusJSON struct {
	HasToken     bool           `json:"has_token"`
	Source       *string        `json:"source"`
	SecretStatus *string        `json:"secret_status"`
	RateLimit    *rateLimitJSON `json:"rate_limit"`
}

func toTokenStatusJSON(st sourcehost.Status) tokenStatusJSON {
	out := tokenStatusJSON{HasToken: st.HasToken}
	if st.Source != "" {
		out.Source = &st.Source
		status := "ok"
		if st.Unreadable {
			status = "unreadable"
		}
		out.SecretStatus = &status
	}
	if st.RateLimit != nil {
		out.RateLimit = &rateLimitJSON{Limit: st.RateLimit.Limit, Remaining: st.RateLimit.Remaining, ResetAt: st.RateLimit.ResetAt}
	}
	return out
}

// tokenRequest is {"token": "..."}; null or "" clears the stored token.
// The key itself is required so an empty body does not clear by accident.
type tokenRequest struct {
	Token json.RawMessage `json:"token" openapi:"types=string|null"`
	token string
}

func (req *tokenRequest) validate() error {
	if len(req.Token) == 0 {
		return cairn.Invalid("token", "is required (null or \"\" clears the stored token)")
	}
	if string(req.Token) == "null" {
		return nil
	}
	if err := json.Unmarshal(req.Token, &req.token); err != nil {
		return cairn.Invalid("token", "must be a string or null")
	}
	return nil
}
