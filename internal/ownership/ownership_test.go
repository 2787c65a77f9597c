package ownership_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/internal/ownership"
)

func sites(ids ...int64) cairn.SiteScope { return cairn.SiteScope{SiteIDs: ids} }

func TestCheckChange(t *testing.T) {
	t.Parallel()
	job := func(scope cairn.SiteScope) ownership.Dependant {
		return ownership.Dependant{Kind: ownership.KindScheduledJob, ID: 7, Name: "nightly", Scope: scope}
	}
	cases := []struct {
		name   string
		editor cairn.SiteScope
		object cairn.SiteScope
		deps   []ownership.Dependant
		code   string
	}{
		{"admin edits a shared object", cairn.AllSites, cairn.AllSites, []ownership.Dependant{job(cairn.AllSites)}, ""},
		{"operator edits a shared object", sites(1), cairn.AllSites, nil, cairn.ECodeForbidden},
		{"operator edits another site's object", sites(1), sites(2), nil, cairn.ECodeForbidden},
		{"operator edits an object spanning more sites", sites(1), sites(1, 2), nil, cairn.ECodeForbidden},
		{"operator edits its own object", sites(1, 2), sites(1), nil, ""},
		{"its own work does not block it", sites(1, 2), sites(1), []ownership.Dependant{job(sites(2))}, ""},
		{"an administrator's job blocks it", sites(1), sites(1), []ownership.Dependant{job(cairn.AllSites)}, cairn.ECodeDependantsExist},
		{"a broader operator's job blocks it", sites(1), sites(1), []ownership.Dependant{job(sites(1, 3))}, cairn.ECodeDependantsExist},
		{"an operator without sites changes nothing shared", sites(), cairn.AllSites, nil, cairn.ECodeForbidden},
	}
	for _, c := range cases {
		err := ownership.CheckChange(ownership.Editor{Username: "x", Scope: c.editor}, "assembly 3", c.object, c.deps)
		require.Equal(t, c.code, cairn.ErrorCode(err), c.name)
		if c.code == cairn.ECodeDependantsExist {
			var e *cairn.Error
			require.ErrorAs(t, err, &e)
			require.Equal(t, []cairn.Dependant{{Kind: "scheduled_job", ID: 7, Name: "nightly"}}, e.Dependants, c.name)
			require.Contains(t, e.Message, `scheduled job 7 "nightly"`)
		}
	}
}

func TestScopeJoinsSavers(t *testing.T) {
	t.Parallel()
	e := ownership.Editor{Scope: sites(3, 1)}
	require.Equal(t, sites(1, 2, 3), ownership.Scope(e, sites(2, 1)))
	require.Equal(t, cairn.AllSites, ownership.Scope(ownership.System, sites(1)))
	require.Nil(t, ownership.Scope(e, cairn.AllSites).Column(), "every site is stored as NULL")
	require.Equal(t, []int64{}, sites().Column(), "no sites is not every site")
	require.Equal(t, cairn.AllSites, cairn.ScopeColumn(nil))
}
