package sourcehost_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/internal/sourcehost"
)

// Branch names follow git check-ref-format; these are its rules' edges.
func TestBranchProblem(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{"main", "feature/x", "release-2026.1", "v1.2.3", "user@host", "a.b/c_d"} {
		require.Empty(t, sourcehost.BranchProblem(ok), ok)
	}
	for _, bad := range []string{"", "a..b", "a//b", "/a", "a/", "a.", "a.lock", "x/.hidden", "@", "a@{1}",
		"a b", "a~1", "a^", "a:b", "a?", "a*", "a[", `a\b`, "a\x00", "-x", strings.Repeat("b", 256)} {
		require.NotEmpty(t, sourcehost.BranchProblem(bad), "%q", bad)
	}
}

func TestCheckHashQueryNamesEveryField(t *testing.T) {
	t.Parallel()
	err := sourcehost.CheckHashQuery(sourcehost.HashQuery{Repo: "no-slash", Branch: "a..b", TTL: -1})
	require.ErrorContains(t, err, "repo")
	require.ErrorContains(t, err, "branch")
	require.ErrorContains(t, err, "ttl")
	for _, repo := range []string{"octo/..", "octo/.", "-octo/x", "octo/a/b", "/x", "octo/"} {
		require.Error(t, sourcehost.CheckHashQuery(sourcehost.HashQuery{Repo: repo, Branch: "main"}), repo)
	}
	require.NoError(t, sourcehost.CheckHashQuery(sourcehost.HashQuery{Repo: "Octo-Org/widgets.go_v2", Branch: "main", TTL: sourcehost.MaxTTL}))
}
