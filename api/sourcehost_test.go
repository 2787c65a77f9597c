package api_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

const (
	shaOne = "1111111111111111111111111111111111111111"
	shaTwo = "2222222222222222222222222222222222222222"
)

func TestSourceTokenSetValidateAndClear(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.admin(t)
	f.github.allow("ghp_valid_token")

	r := f.do(t, "GET", "/api/github/token", admin, nil)
	require.Equal(t, 200, r.Status, r.Raw)
	require.Equal(t, map[string]any{"has_token": false, "source": nil, "secret_status": nil, "rate_limit": nil}, r.Body)

	for _, body := range []any{map[string]any{}, map[string]any{"token": 42}, map[string]any{"token": "has space"}} {
		r = f.do(t, "POST", "/api/github/token", admin, body)
		require.Equal(t, 400, r.Status, r.Raw)
		require.NotEmpty(t, r.field("token"), r.Raw)
	}
	refused := f.do(t, "POST", "/api/github/token", admin, map[string]any{"token": "ghp_refused_token"})
	require.Equal(t, 400, refused.Status, refused.Raw)
	require.Equal(t, "was refused by the source host", refused.field("token"))
	require.Equal(t, "Bearer ghp_refused_token", f.github.lastAuth())

	set := f.do(t, "POST", "/api/github/token", admin, map[string]any{"token": "ghp_valid_token"})
	require.Equal(t, 200, set.Status, set.Raw)
	require.Equal(t, true, set.Body["has_token"])
	require.Equal(t, "stored", set.Body["source"])
	require.Equal(t, "ok", set.Body["secret_status"])
	require.Equal(t, map[string]any{"limit": float64(5000), "remaining": float64(4999), "reset_at": "2030-01-01T00:00:00Z"}, set.Body["rate_limit"])
	status := f.do(t, "GET", "/api/github/token", admin, nil)
	require.Equal(t, set.Body, status.Body)
	for _, resp := range []response{refused, set, status} {
		require.NotContains(t, resp.Raw, "ghp_")
	}
	row, err := f.store.SourceTokenGet(context.Background())
	require.NoError(t, err)
	require.NotContains(t, string(row.TokenSealed), "ghp_valid_token")
	require.Equal(t, "admin", row.UpdatedBy)

	cleared := f.do(t, "POST", "/api/github/token", admin, map[string]any{"token": nil})
	require.Equal(t, 200, cleared.Status, cleared.Raw)
	require.Equal(t, false, cleared.Body["has_token"])
	require.Equal(t, 200, f.do(t, "POST", "/api/github/token", admin, map[string]any{"token": "ghp_valid_token"}).Status)
	cleared = f.do(t, "POST", "/api/github/token", admin, map[string]any{"token": ""})
	require.Equal(t, false, cleared.Body["has_token"])

	f.github.srv.Close()
	down := f.do(t, "POST", "/api/github/token", admin, map[string]any{"token": "ghp_valid_token"})
	require.Equal(t, 503, down.Status, down.Raw)
	require.Equal(t, "unavailable", down.Body["error"])
	require.False(t, f.do(t, "GET", "/api/github/token", admin, nil).Body["has_token"].(bool), "a failed check stores nothing")
}

// currentHash asks for the head of octo/widgets@main, forcing a fresh call.
func (f *fixture) currentHash(t *testing.T, base, token, headerToken string) response {
	t.Helper()
	req, err := http.NewRequest("GET", base+"/api/repo/current_hash?repo=octo/widgets&branch=main&refresh=force", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	if headerToken != "" {
		req.Header.Set("X-GitHub-Token", headerToken)
	}
	return do(t, req)
}

// The token order of SPEC rule 7: stored, else the request header, else
// the environment; the caller's session token is never sent upstream.
func TestCurrentHashTokenOrder(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.admin(t)
	operator := f.operator(t, "hash-operator")
	for _, tok := range []string{"stored-tok", "header-tok", "env-tok"} {
		f.github.allow(tok)
	}
	f.github.setBranch("octo/widgets/main", shaOne)

	r := f.currentHash(t, f.url, operator, "")
	require.Equal(t, 200, r.Status, r.Raw)
	require.Equal(t, shaOne, r.Body["hash"])
	require.Equal(t, "", f.github.lastAuth(), "no token at all: an anonymous call, never the caller's session")
	r = f.currentHash(t, f.url, operator, "header-tok")
	require.Equal(t, 200, r.Status, r.Raw)
	require.Equal(t, "Bearer header-tok", f.github.lastAuth())

	// A replica with an environment token: it is used without a header,
	// and the header still comes before it.
	f.githubEnvToken = "env-tok"
	withEnv := f.newEngine(t)
	require.NoError(t, withEnv.cipher.Unlock(context.Background(), passphrase))
	r = f.currentHash(t, withEnv.http.URL, operator, "")
	require.Equal(t, 200, r.Status, r.Raw)
	require.Equal(t, "Bearer env-tok", f.github.lastAuth())
	r = f.currentHash(t, withEnv.http.URL, operator, "header-tok")
	require.Equal(t, "Bearer header-tok", f.github.lastAuth())
	st := f.call(t, withEnv.http.URL, "GET", "/api/github/token", admin, nil)
	require.Equal(t, "environment", st.Body["source"])
	require.NotContains(t, st.Raw, "env-tok")

	// A stored token comes first of all.
	set := f.do(t, "POST", "/api/github/token", admin, map[string]any{"token": "stored-tok"})
	require.Equal(t, 200, set.Status, set.Raw)
	r = f.currentHash(t, withEnv.http.URL, operator, "header-tok")
	require.Equal(t, 200, r.Status, r.Raw)
	require.Equal(t, "Bearer stored-tok", f.github.lastAuth())
	r = f.currentHash(t, f.url, operator, "")
	require.Equal(t, "Bearer stored-tok", f.github.lastAuth())
	for _, tok := range []string{admin, operator} {
		require.NotContains(t, f.github.allAuths(), "Bearer "+tok)
	}
}

func TestCurrentHashCacheIsSharedAndHonoursTTL(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.admin(t)
	operator := f.operator(t, "cache-operator")
	f.github.setBranch("octo/widgets/release/v1", shaOne)
	const q = "/api/repo/current_hash?repo=octo/widgets&branch=release/v1"

	r := f.do(t, "GET", q, operator, nil)
	require.Equal(t, 200, r.Status, r.Raw)
	require.Equal(t, map[string]any{"repo": "octo/widgets", "branch": "release/v1", "hash": shaOne, "cached": false,
		"fetched_at": r.Body["fetched_at"]}, r.Body)
	require.Equal(t, 1, f.github.branchCalls())

	f.github.setBranch("octo/widgets/release/v1", shaTwo)
	r = f.do(t, "GET", q, operator, nil)
	require.Equal(t, shaOne, r.Body["hash"], "within the default 60 s the cached head is answered")
	require.Equal(t, true, r.Body["cached"])
	other := f.newEngine(t)
	require.NoError(t, other.cipher.Unlock(context.Background(), passphrase))
	r = f.call(t, other.http.URL, "GET", q, operator, nil)
	require.Equal(t, shaOne, r.Body["hash"], "another replica shares the cache")
	require.Equal(t, 1, f.github.branchCalls())

	r = f.do(t, "GET", q+"&refresh=force", operator, nil)
	require.Equal(t, shaTwo, r.Body["hash"])
	require.Equal(t, false, r.Body["cached"])
	require.Equal(t, 2, f.github.branchCalls())
	r = f.do(t, "GET", q+"&ttl=0", operator, nil)
	require.Equal(t, false, r.Body["cached"], "ttl=0 always asks")
	require.Equal(t, 3, f.github.branchCalls())

	f.clk.Advance(30 * time.Second)
	require.Equal(t, true, f.do(t, "GET", q, operator, nil).Body["cached"])
	require.Equal(t, false, f.do(t, "GET", q+"&ttl=20", operator, nil).Body["cached"], "a shorter ttl refreshes sooner")
	f.clk.Advance(61 * time.Second)
	require.Equal(t, false, f.do(t, "GET", q, operator, nil).Body["cached"])
	require.Equal(t, 5, f.github.branchCalls())
}

func TestCurrentHashValidationAndUpstreamErrors(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.admin(t)
	operator := f.operator(t, "errors-operator")
	f.github.setBranch("octo/widgets/main", shaOne)

	r := f.do(t, "GET", "/api/repo/current_hash?repo=octo&branch=a..b&ttl=86401&refresh=maybe", operator, nil)
	require.Equal(t, 400, r.Status, r.Raw)
	for _, field := range []string{"repo", "branch", "ttl", "refresh"} {
		require.NotEmpty(t, r.field(field), "field %s: %s", field, r.Raw)
	}
	for _, q := range []string{
		"repo=octo/widgets&branch=main&ttl=abc", "repo=octo/widgets&branch=main&ttl=-1",
		"repo=octo/../x&branch=main", "repo=octo/widgets", "repo=octo/widgets&branch=main.lock",
		"repo=octo/widgets&branch=/main", "repo=octo/widgets&branch=.hidden/x", "repo=octo/widgets&branch=a%20b",
	} {
		r = f.do(t, "GET", "/api/repo/current_hash?"+q, operator, nil)
		require.Equal(t, 400, r.Status, "%s: %s", q, r.Raw)
		require.Equal(t, "validation_failed", r.Body["error"])
	}
	require.Equal(t, 0, f.github.branchCalls(), "invalid queries never reach the source host")

	r = f.do(t, "GET", "/api/repo/current_hash?repo=octo/widgets&branch=gone", operator, nil)
	require.Equal(t, 404, r.Status, r.Raw)
	require.Equal(t, "not_found", r.Body["error"])

	f.github.allow("header-tok")
	req, err := http.NewRequest("GET", f.url+"/api/repo/current_hash?repo=octo/widgets&branch=main", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+operator)
	req.Header.Set("X-GitHub-Token", "wrong-tok")
	r = do(t, req)
	require.Equal(t, 400, r.Status, r.Raw)
	require.NotEmpty(t, r.field("X-GitHub-Token"))
	require.NotContains(t, r.Raw, "wrong-tok")

	f.github.set(func(g *fakeGitHub) { g.limited = true })
	r = f.do(t, "GET", "/api/repo/current_hash?repo=octo/widgets&branch=main", operator, nil)
	require.Equal(t, 429, r.Status, r.Raw)
	require.Equal(t, "rate_limited", r.Body["error"])
	require.NotEmpty(t, r.Header.Get("Retry-After"))

	f.github.set(func(g *fakeGitHub) { g.limited, g.status = false, http.StatusBadGateway })
	r = f.do(t, "GET", "/api/repo/current_hash?repo=octo/widgets&branch=main", operator, nil)
	require.Equal(t, 503, r.Status, r.Raw)
	require.Equal(t, "unavailable", r.Body["error"])

	f.github.srv.Close()
	r = f.do(t, "GET", "/api/repo/current_hash?repo=octo/widgets&branch=main", operator, nil)
	require.Equal(t, 503, r.Status, r.Raw)
	require.Equal(t, "unavailable", r.Body["error"])
	require.NotContains(t, r.Raw, strings.TrimPrefix(f.github.srv.URL, "http://"), "the upstream address is not shown")
}
