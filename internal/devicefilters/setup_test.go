package devicefilters_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/devicefilters"
	"github.com/cairn-rmm/cairn/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// now is the fixed clock of every test service.
var now = time.Date(2030, 1, 2, 3, 4, 5, 123456789, time.UTC)

type fixture struct {
	store *db.Store
	svc   *devicefilters.Service
	sites map[string]int64
}

func setup(t *testing.T) *fixture {
	t.Helper()
	store := pgtest.NewDB(t)
	f := &fixture{store: store, sites: map[string]int64{}}
	f.svc = devicefilters.New(store, devicefilters.Config{Now: func() time.Time { return now }})
	for _, name := range []string{"alpha", "beta"} {
		s, err := store.SiteInsert(context.Background(), db.SiteInsertParams{Name: name, Slug: name})
		require.NoError(t, err)
		f.sites[name] = int64(s.ID)
	}
	return f
}

// exec runs fixture SQL (tests only; it stands for what ingest writes).
func (f *fixture) exec(t *testing.T, sql string, args ...any) {
	t.Helper()
	_, err := f.store.Pool.Exec(context.Background(), sql, args...)
	require.NoError(t, err)
}

func tree(t *testing.T, doc string) devicefilters.Node {
	t.Helper()
	n, err := devicefilters.Parse([]byte(doc), "filter")
	require.NoError(t, err, doc)
	return n
}

func hostnames(t *testing.T, f *fixture, scope cairn.SiteScope, doc string) []string {
	t.Helper()
	page, err := f.svc.Page(context.Background(), scope, devicefilters.PageQuery{Filters: []devicefilters.Node{tree(t, doc)}, Limit: 1000})
	require.NoError(t, err, doc)
	out := []string{}
	for _, r := range page.Rows {
		out = append(out, r.Hostname)
	}
	require.EqualValues(t, len(out), page.Total, doc)
	return out
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}
