package patches_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/internal/patches"
)

// An install its lane did not take (Temporal refused the order) is
// finished as failed, so the next evaluation asks for it afresh rather
// than finding it open forever; one the lane took stays open and is not
// asked for again.
func TestEvaluateAbandonsWhatNoLaneTook(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.device(t, "web-1", "a")
	f.report(t, "web-1", nil, pending("openssl", "3.0.1", "3.0.2", true))
	site := cairn.SiteID(f.sites["a"])
	_, err := f.svc.CreatePolicy(t.Context(), cairn.AllSites, "admin", patches.PolicyInput{Name: "a", Type: patches.TypeSite,
		RoleScope: patches.RoleServer, SiteID: &site, Rules: []patches.Rule{{RuleType: patches.RuleCategory,
			MatchType: patches.MatchEquals, Value: "security", Action: patches.ActionApprove}}})
	require.NoError(t, err)

	res, queued, err := f.svc.Evaluate(t.Context(), cairn.AllSites, "system:test", 0)
	require.NoError(t, err)
	require.Len(t, res.Installs, 1)
	refused := errors.New("temporal refused")
	err = f.svc.EnqueueAll(t.Context(), queued, func(context.Context, patches.Queued) error { return refused })
	require.ErrorIs(t, err, refused)
	first, err := f.svc.Get(t.Context(), queued[0].Install.ID)
	require.NoError(t, err)
	require.Equal(t, patches.StateFailed, first.State)

	res, queued, err = f.svc.Evaluate(t.Context(), cairn.AllSites, "system:test", 0)
	require.NoError(t, err)
	require.Len(t, res.Installs, 1, "asked for afresh")
	require.NotEqual(t, first.ID, queued[0].Install.ID)
	require.NoError(t, f.svc.EnqueueAll(t.Context(), queued, func(context.Context, patches.Queued) error { return nil }))
	res, _, err = f.svc.Evaluate(t.Context(), cairn.AllSites, "system:test", 0)
	require.NoError(t, err)
	require.Empty(t, res.Installs, "the open install is not asked for again")
}
