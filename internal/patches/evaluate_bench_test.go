package patches_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/internal/patches"
)

// BenchmarkPatchEvaluate50k times policy evaluation over the 50,000
// devices of seed50k (docs/benchmarks.md "Patch policy evaluation at
// 50,000 devices"). A site policy approves KB5000001, pending on the 5,000
// devices of site a that carry it: the first evaluation is the wave (5,000
// installs in one immediate patch_install job, logged); each timed one
// after it judges every device again and finds every approved row with an
// open install (the 15-minute Schedule's steady state):
//
//	go test -run '^$' -bench BenchmarkPatchEvaluate50k -benchtime 5x ./internal/patches/
func BenchmarkPatchEvaluate50k(b *testing.B) {
	f := setup(b)
	ctx := context.Background()
	seed50k(b, f)
	site := cairn.SiteID(f.sites["a"])
	_, err := f.svc.CreatePolicy(ctx, cairn.AllSites, "admin", patches.PolicyInput{Name: "kb", Type: patches.TypeSite,
		RoleScope: patches.RoleServer, SiteID: &site, Rules: []patches.Rule{{RuleType: patches.RuleKB,
			MatchType: patches.MatchEquals, Value: "KB5000001", Action: patches.ActionApprove}}})
	require.NoError(b, err)

	start := time.Now()
	res, _, err := f.svc.Evaluate(ctx, cairn.AllSites, "bench", 0)
	require.NoError(b, err)
	require.Len(b, res.Installs, 5000)
	require.Len(b, res.Jobs, 1, "the devices share one approved set")
	b.Logf("wave: %d devices judged, %d installs in %d job(s) in %s", res.DeviceCount, len(res.Installs), len(res.Jobs),
		time.Since(start).Round(time.Millisecond))

	for b.Loop() {
		res, _, err := f.svc.Evaluate(ctx, cairn.AllSites, "bench", 0)
		require.NoError(b, err)
		require.Equal(b, 50000, res.DeviceCount)
		require.Empty(b, res.Installs)
	}
}
