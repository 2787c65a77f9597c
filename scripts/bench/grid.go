package main

// The device-grid figure (-grid): a fresh Engine on its own private
// PostgreSQL, seeded with a large fleet (gridseed.go), then the grid's
// reads timed through the real HTTP API, as the admin and as an operator
// limited to some sites: a page of devices sorted by last seen, a filter
// preview with a software version condition, and the software audit's
// first page. Each is warmed up, then timed sequentially.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cairn-rmm/cairn/internal/devpostgres"
)

type gridOptions struct {
	devices, software, sites, iterations, warmup int
	seed                                         uint64
	// reuse measures the fleet an earlier run seeded (gridState).
	reuse bool
}

// gridState is what a later -grid-reuse run needs of an earlier one.
type gridState struct {
	Secret  string     `json:"secret"`
	Sites   []gridSite `json:"sites"`
	Seed    seedResult `json:"seed"`
	Devices int        `json:"devices"`
}

type gridRoute struct {
	Name   string  `json:"name"`
	As     string  `json:"as"`
	P50    float64 `json:"p50_ms"`
	P99    float64 `json:"p99_ms"`
	Max    float64 `json:"max_ms"`
	N      int     `json:"n"`
	Total  any     `json:"total,omitempty"`
	Errors int     `json:"errors,omitempty"`
	Error  string  `json:"error,omitempty"`
}

type gridResult struct {
	Seed   seedResult  `json:"seed"`
	Routes []gridRoute `json:"routes"`
	// Sizes are the biggest relations after the seed, in MiB.
	Sizes map[string]float64 `json:"sizes_mib"`
}

func runGrid(ctx context.Context, o runOptions, g gridOptions, dataDir string) (*gridResult, error) {
	statePath := filepath.Join(dataDir, "grid-state.json")
	var state gridState
	if g.reuse {
		raw, err := os.ReadFile(statePath)
		if err != nil {
			return nil, fmt.Errorf("-grid-reuse: no earlier run in %s: %w", dataDir, err)
		}
		if err := json.Unmarshal(raw, &state); err != nil {
			return nil, err
		}
	} else {
		if err := os.RemoveAll(dataDir); err != nil {
			return nil, err
		}
		if err := os.MkdirAll(dataDir, 0o755); err != nil {
			return nil, err
		}
	}
	abs, _ := filepath.Abs(dataDir)
	cluster, err := devpostgres.Start(ctx, devpostgres.Options{Dir: filepath.Join(abs, "postgres")})
	if err != nil {
		return nil, fmt.Errorf("private postgres: %w", err)
	}
	defer cluster.Stop()
	port, tport := freePort(), freePort()
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	env := []string{"DATABASE_URL=" + cluster.URL}
	if g.reuse {
		// A restarted Engine's master cipher is locked until unlocked.
		pass := filepath.Join(dataDir, "passphrase")
		if err := os.WriteFile(pass, []byte("bench passphrase 123"), 0o600); err != nil {
			return nil, err
		}
		env = append(env, "CAIRN_AEGIS_PASSPHRASE_FILE="+pass)
	}
	engine, err := startEngine(ctx, o.engineBin, dataDir, port, tport, env...)
	if err != nil {
		return nil, err
	}
	defer func() { stopEngine(engine) }()
	admin := &client{base: base}
	if err := admin.waitReady(ctx, 3*time.Minute); err != nil {
		return nil, fmt.Errorf("engine not ready: %w", err)
	}
	conn, err := pgx.Connect(ctx, cluster.URL)
	if err != nil {
		return nil, err
	}
	defer conn.Close(context.Background())
	var out *gridResult
	var sites []gridSite
	if g.reuse {
		if err := admin.adminLogin(ctx, state.Secret); err != nil {
			return nil, err
		}
		sites = state.Sites
		out = &gridResult{Seed: state.Seed, Sizes: map[string]float64{}}
		// Indexes a migration just added need statistics too.
		if _, err := conn.Exec(ctx, "ANALYZE"); err != nil {
			return nil, err
		}
	} else {
		if sites, out, err = gridSeedFleet(ctx, admin, conn, g, dataDir); err != nil {
			return nil, err
		}
		raw, _ := json.Marshal(gridState{Secret: admin.secret, Sites: sites, Seed: out.Seed, Devices: g.devices})
		if err := os.WriteFile(statePath, raw, 0o600); err != nil {
			return nil, err
		}
	}
	if err := gridSizes(ctx, conn, out); err != nil {
		return nil, err
	}

	// The site-limited operator: two of the sites.
	operator, err := gridOperator(ctx, admin, []int64{sites[0].ID, sites[1%len(sites)].ID}, !g.reuse)
	if err != nil {
		return nil, err
	}
	preview := map[string]any{"limit": 25, "filter": map[string]any{"match": "all", "conditions": []any{
		map[string]any{"field": "os", "op": "contains", "value": "Windows"},
		map[string]any{"field": "last_seen", "op": "within_last", "value": 7 * 24 * 3600},
		map[string]any{"field": "software", "key": "Google Chrome", "op": "version_lt", "value": "120"},
	}}}
	for _, who := range []struct {
		name string
		c    *client
	}{{"admin", admin}, {"operator", operator}} {
		out.Routes = append(out.Routes,
			timeRoute(ctx, who.c, who.name, "devices page, sort -last_seen", "GET", "/api/devices?limit=100&sort=-last_seen", nil, g),
			timeRoute(ctx, who.c, who.name, "filter preview (3 conditions)", "POST", "/api/device_filters/preview", preview, g),
			timeRoute(ctx, who.c, who.name, "software audit, first page", "GET", "/api/software/audit?limit=100", nil, g))
	}
	return out, nil
}

// gridSeedFleet bootstraps the Engine, makes the sites and seeds the
// fleet.
func gridSeedFleet(ctx context.Context, admin *client, conn *pgx.Conn, g gridOptions, dataDir string) ([]gridSite, *gridResult, error) {
	if _, err := admin.prepare(ctx, 1, dataDir); err != nil {
		return nil, nil, err
	}
	// Sites: the one prepare made and more.
	prefixes := []string{"nyc", "ber", "lon", "par", "syd", "tor", "sfo", "ams", "mad", "sgp", "tok", "dub"}
	list, err := admin.call(ctx, "GET", "/api/sites", nil)
	if err != nil {
		return nil, nil, err
	}
	first := int64(list["sites"].([]any)[0].(map[string]any)["site_id"].(float64))
	sites := []gridSite{{ID: first, Prefix: prefixes[0]}}
	for i := 1; i < g.sites; i++ {
		p := prefixes[i%len(prefixes)] + fmt.Sprint(i/len(prefixes)+1)
		s, err := admin.call(ctx, "POST", "/api/sites", map[string]any{"name": "Office " + strings.ToUpper(p), "site_worker_slug": "grid-" + p})
		if err != nil {
			return nil, nil, err
		}
		sites = append(sites, gridSite{ID: int64(s["site_id"].(float64)), Prefix: p})
	}
	fmt.Fprintf(logOut, "grid: seeding %d devices x %d software over %d sites\n", g.devices, g.software, len(sites))
	seed, err := seedGrid(ctx, conn, sites, g.devices, g.software, g.seed)
	if err != nil {
		return nil, nil, err
	}
	return sites, &gridResult{Seed: seed, Sizes: map[string]float64{}}, nil
}

// gridSizes records the biggest relations.
func gridSizes(ctx context.Context, conn *pgx.Conn, out *gridResult) error {
	rows, err := conn.Query(ctx, `SELECT c.relname, pg_total_relation_size(c.oid)::float8 / 1048576
		FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = 'public' AND c.relkind IN ('r', 'm') ORDER BY 2 DESC LIMIT 8`)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var name string
		var mib float64
		if err := rows.Scan(&name, &mib); err != nil {
			return err
		}
		out.Sizes[name] = round(mib, 1)
	}
	return rows.Err()
}

// gridOperator creates an operator assigned to siteIDs (MFA off) and
// signs in as it.
func gridOperator(ctx context.Context, admin *client, siteIDs []int64, create bool) (*client, error) {
	const user, pw = "grid-operator", "grid operator password 123"
	if create {
		if err := admin.reauth(ctx, benchAdminPassword); err != nil {
			return nil, err
		}
		if _, err := admin.call(ctx, "POST", "/api/users", map[string]any{"username": user, "password": pw, "role": "operator"}); err != nil {
			return nil, err
		}
		if _, err := admin.call(ctx, "POST", "/api/users/"+user+"/mfa", map[string]any{"action": "disable"}); err != nil {
			return nil, err
		}
		if _, err := admin.call(ctx, "POST", "/api/user_site_assignments/assign", map[string]any{"usernames": []string{user}, "site_ids": siteIDs}); err != nil {
			return nil, err
		}
	}
	login, err := admin.call(ctx, "POST", "/api/auth/login", map[string]any{"username": user, "password": pw})
	if err != nil {
		return nil, err
	}
	tok, _ := login["token"].(string)
	if tok == "" {
		return nil, fmt.Errorf("operator login gave no token: %v", login)
	}
	return &client{base: admin.base, token: tok}, nil
}

// timeRoute warms a route up, then times it g.iterations times, one
// request after another on one keep-alive connection.
func timeRoute(ctx context.Context, c *client, as, name, method, path string, body any, g gridOptions) gridRoute {
	out := gridRoute{Name: name, As: as}
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
	defer hc.CloseIdleConnections()
	var raw []byte
	if body != nil {
		raw, _ = json.Marshal(body)
	}
	do := func() (time.Duration, map[string]any, error) {
		var rd io.Reader
		if raw != nil {
			rd = strings.NewReader(string(raw))
		}
		req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
		if err != nil {
			return 0, nil, err
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+c.token)
		t0 := time.Now()
		res, err := hc.Do(req)
		if err != nil {
			return 0, nil, err
		}
		buf, err := io.ReadAll(res.Body)
		res.Body.Close()
		d := time.Since(t0)
		if err != nil {
			return d, nil, err
		}
		if res.StatusCode != 200 {
			return d, nil, fmt.Errorf("%d %s", res.StatusCode, strings.TrimSpace(string(buf[:min(len(buf), 200)])))
		}
		var m map[string]any
		_ = json.Unmarshal(buf, &m)
		return d, m, nil
	}
	for range g.warmup {
		if _, m, err := do(); err != nil {
			out.Error = err.Error()
			return out
		} else if m != nil {
			out.Total = m["total"]
		}
	}
	var ds []time.Duration
	for range g.iterations {
		d, _, err := do()
		if err != nil {
			out.Errors++
			out.Error = err.Error()
			continue
		}
		ds = append(ds, d)
	}
	if len(ds) == 0 {
		return out
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	out.N, out.P50, out.P99, out.Max = len(ds), ms(percentile(ds, 0.50)), ms(percentile(ds, 0.99)), ms(ds[len(ds)-1])
	fmt.Fprintf(logOut, "grid: %-9s %-32s p50 %6.1f ms  p99 %6.1f ms  (total %v)\n", as, name, out.P50, out.P99, out.Total)
	return out
}

// adminLogin signs the bench admin in again (a -grid-reuse run).
func (c *client) adminLogin(ctx context.Context, secret string) error {
	login, err := c.call(ctx, "POST", "/api/auth/login", map[string]any{"username": "bench", "password": benchAdminPassword})
	if err != nil {
		return err
	}
	c.secret = secret
	code, err := c.nextCode(ctx)
	if err != nil {
		return err
	}
	sess, err := c.call(ctx, "POST", "/api/auth/mfa/verify", map[string]any{"pending_token": login["pending_token"], "code": code})
	if err != nil {
		return err
	}
	c.token = sess["token"].(string)
	return nil
}
