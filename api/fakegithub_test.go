package api_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// fakeGitHub implements the two GitHub API calls the Engine makes:
// GET /rate_limit and GET /repos/{owner}/{repo}/branches/{branch}. Tokens in
// valid are accepted, any other Authorization is refused with 401, and no
// Authorization is an anonymous caller (allowed, as for public repos).
type fakeGitHub struct {
	srv *httptest.Server

	mu       sync.Mutex
	valid    map[string]bool
	branches map[string]string // "owner/repo/branch" -> sha
	auths    []string          // Authorization of every call, in order
	calls    int               // branch calls
	status   int               // when set, branch calls answer this status
	limited  bool              // branch calls answer 403 with an exhausted budget
}

func newFakeGitHub(t *testing.T) *fakeGitHub {
	g := &fakeGitHub{valid: map[string]bool{}, branches: map[string]string{}}
	g.srv = httptest.NewServer(http.HandlerFunc(g.serve))
	t.Cleanup(g.srv.Close)
	return g
}

func (g *fakeGitHub) serve(w http.ResponseWriter, r *http.Request) {
	g.mu.Lock()
	defer g.mu.Unlock()
	auth := r.Header.Get("Authorization")
	g.auths = append(g.auths, auth)
	if auth != "" && !g.valid[strings.TrimPrefix(auth, "Bearer ")] {
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(`{"message":"Bad credentials"}`))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	switch {
	case r.Method == "GET" && r.URL.Path == "/rate_limit":
		limit := 60
		if auth != "" {
			limit = 5000
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"rate": map[string]any{"limit": limit, "remaining": limit - 1, "used": 1, "reset": 1893456000}})
	case r.Method == "GET" && strings.HasPrefix(r.URL.Path, "/repos/"):
		g.calls++
		owner, rest, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/repos/"), "/")
		repo, branch, _ := strings.Cut(rest, "/branches/")
		sha, ok := g.branches[owner+"/"+repo+"/"+branch]
		switch {
		case g.limited:
			w.Header().Set("X-RateLimit-Remaining", "0")
			w.Header().Set("X-RateLimit-Reset", "1893456000")
			w.WriteHeader(http.StatusForbidden)
		case g.status != 0:
			w.WriteHeader(g.status)
		case !ok:
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"message":"Branch not found"}`))
		default:
			_ = json.NewEncoder(w).Encode(map[string]any{"name": branch, "commit": map[string]any{"sha": sha}})
		}
	default:
		w.WriteHeader(http.StatusNotFound)
	}
}

func (g *fakeGitHub) setBranch(repoBranch, sha string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.branches[repoBranch] = sha
}

func (g *fakeGitHub) allow(token string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.valid[token] = true
}

func (g *fakeGitHub) set(fn func(g *fakeGitHub)) {
	g.mu.Lock()
	defer g.mu.Unlock()
	fn(g)
}

// lastAuth is the Authorization header of the latest call.
func (g *fakeGitHub) lastAuth() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.auths) == 0 {
		return "<no call>"
	}
	return g.auths[len(g.auths)-1]
}

func (g *fakeGitHub) allAuths() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]string(nil), g.auths...)
}

func (g *fakeGitHub) branchCalls() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.calls
}
