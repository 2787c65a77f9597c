package main

// The watchdogs figure (-watchdogs, issue 25): a fresh Engine on its own
// private PostgreSQL, seeded with a fleet by COPY (gridseed.go) whose
// heartbeat columns say online, its inventory carrying services and
// processes, then watchdogs over every cheap-to-read and expensive-to-read
// subject, evaluated every minute by the Engine's own maintenance job.
// Measured: the Engine's and PostgreSQL's CPU with no watchdog, then
// with them (their difference is what evaluation costs); the lag from a
// condition's start (a device's CPU going over the threshold, written
// where a heartbeat writes it) to its incident being open; and how long
// after its last heartbeat a silent device's offline incident opens.
// Heartbeats themselves are not simulated (the agents bench measures
// them): the seeded devices stay online by a last_seen ahead of the run.

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/internal/devices"
	"github.com/cairn-rmm/cairn/internal/devpostgres"
)

type watchdogOptions struct {
	devices, software, sites int
	// steady is how long CPU is sampled in each phase.
	steady time.Duration
	// probes are the devices whose CPU goes over the threshold, and
	// offline the devices that stop heartbeating, each at its own moment
	// spread over a minute.
	probes, offline int
	seed            uint64
}

type lagFigures struct {
	N       int     `json:"n"`
	Missing int     `json:"missing,omitempty"`
	P50     float64 `json:"p50_s"`
	P90     float64 `json:"p90_s"`
	P99     float64 `json:"p99_s"`
	Max     float64 `json:"max_s"`
}

type watchdogResult struct {
	Devices         int        `json:"devices"`
	Watchdogs       int        `json:"watchdogs"`
	IntervalSeconds int        `json:"interval_seconds"`
	Seed            seedResult `json:"seed"`
	// Idle is the Engine and PostgreSQL with the fleet and no watchdog;
	// Evaluating with every watchdog live, before any probe.
	Idle       phaseUsage `json:"idle_no_watchdogs"`
	Evaluating phaseUsage `json:"evaluating"`
	// IncidentsAtRest are the incidents the seeded fleet opened (the
	// rules are chosen so that none should).
	IncidentsAtRest int `json:"incidents_at_rest"`
	// EvaluationsPerWatchdog is how many times each watchdog was
	// evaluated during the evaluating phase (median).
	EvaluationsPerWatchdog float64 `json:"evaluations_per_watchdog_median"`
	// ConditionLag is from a device's CPU going over 90% to its incident
	// being open (opened_at).
	ConditionLag lagFigures `json:"condition_to_incident"`
	// OfflineDetection is from a device's last heartbeat to its offline
	// incident being open; OnlineWindowSeconds of it is the Engine's
	// definition of offline.
	OfflineDetection    lagFigures `json:"last_heartbeat_to_offline_incident"`
	OnlineWindowSeconds float64    `json:"online_window_seconds"`
}

type phaseUsage struct {
	Seconds float64 `json:"seconds"`
	Engine  usage   `json:"engine"`
	PG      usage   `json:"postgresql"`
	// Cores is the two together.
	Cores float64 `json:"cores_together"`
}

// benchWatchdogs are the policies: one of each subject the seeded data
// can answer (with thresholds it does not reach), several windows and
// software rules, which read the most per device. Probe and offline are
// the two the measurements trip.
func benchWatchdogs() []map[string]any {
	rule := func(subject, op, target string, threshold float64, forSeconds int) map[string]any {
		r := map[string]any{"subject": subject, "operator": op, "target": target, "for_seconds": forSeconds}
		if threshold != 0 {
			r["threshold"] = threshold
		}
		return r
	}
	ver := func(subject, target, value string) map[string]any {
		return map[string]any{"subject": subject, "operator": "version_lt", "target": target, "value": value}
	}
	w := []struct {
		name  string
		match string
		rules []map[string]any
	}{
		{"Offline", "all", []map[string]any{rule("offline", "is", "", 0, 0)}},
		{"CPU over 90%", "all", []map[string]any{rule("cpu_percent", "gt", "", 90, 0)}},
		{"CPU over 95% for 5 minutes", "all", []map[string]any{rule("cpu_percent", "gt", "", 95, 300)}},
		{"Memory over 90%", "all", []map[string]any{rule("memory_percent", "gt", "", 90, 0)}},
		{"Memory over 95% for 10 minutes", "all", []map[string]any{rule("memory_percent", "gt", "", 95, 600)}},
		{"Disk over 95%", "all", []map[string]any{rule("storage_percent", "gt", "", 95, 0)}},
		{"System volume over 92%", "all", []map[string]any{rule("storage_percent", "gt", "/", 92, 0)}},
		{"Up over 90 days", "all", []map[string]any{rule("uptime_seconds", "gt", "", 90*86400, 0)}},
		{"Too many sessions", "all", []map[string]any{rule("sessions", "gt", "", 20, 0)}},
		{"Spooler stopped", "all", []map[string]any{rule("service", "not_running", "Spooler", 0, 0)}},
		{"Time service stopped", "all", []map[string]any{rule("service", "not_running", "W32Time", 0, 0)}},
		{"EDR sensor not running", "all", []map[string]any{rule("process", "missing", "CSFalconService", 0, 0)}},
		{"Backup agent not running", "all", []map[string]any{rule("process", "missing", "BackupAgent", 0, 0)}},
		{"Forbidden software", "any", []map[string]any{rule("software", "present", "BitTorrent", 0, 0), rule("software", "present", "uTorrent", 0, 0)}},
		{"Old Chrome", "all", []map[string]any{ver("software", "Google Chrome", "100")}},
		{"Old 7-Zip", "all", []map[string]any{ver("software", "7-Zip 23.01 (x64)", "20")}},
		{"Old agent", "all", []map[string]any{ver("agent_version", "", "0.5.0")}},
		{"Unhealthy role", "all", []map[string]any{rule("role_health", "unhealthy", "", 0, 0)}},
		{"Rebooted", "all", []map[string]any{rule("rebooted", "is", "", 0, 0)}},
		{"Busy and full", "all", []map[string]any{rule("cpu_percent", "gt", "", 97, 0), rule("storage_percent", "gt", "", 97, 0)}},
	}
	out := make([]map[string]any, len(w))
	for i, x := range w {
		out[i] = map[string]any{"name": x.name, "severity": "warning", "targets": map[string]any{"kind": "all"}, "match": x.match, "rules": x.rules,
			"noise": map[string]any{"interval_seconds": 60, "consecutive_matches": 1}, "actions": []map[string]any{{"type": "track"}}}
	}
	return out
}

// benchServices and benchProcesses are every seeded device's service and
// process inventory: sizes of a real Windows workstation.
func benchServices() []proto.Service {
	names := []string{"Spooler", "W32Time", "wuauserv", "BITS", "Dhcp", "Dnscache", "EventLog", "LanmanServer", "LanmanWorkstation",
		"mpssvc", "RpcSs", "Schedule", "SENS", "ShellHWDetection", "Themes", "TrkWks", "WinDefend", "Winmgmt", "WSearch", "AudioSrv"}
	var out []proto.Service
	for i := range 60 {
		n := fmt.Sprintf("Svc%02d", i)
		if i < len(names) {
			n = names[i]
		}
		state := "running"
		if i%3 == 2 {
			state = "stopped"
		}
		if n == "Spooler" || n == "W32Time" {
			state = "running"
		}
		out = append(out, proto.Service{Name: n, DisplayName: n + " service", State: state, StartMode: "auto"})
	}
	return out
}

func benchProcesses() []proto.Process {
	names := []string{"System", "smss.exe", "csrss.exe", "wininit.exe", "services.exe", "lsass.exe", "svchost.exe", "explorer.exe",
		"CSFalconService.exe", "BackupAgent.exe", "chrome.exe", "msedge.exe", "Teams.exe", "OneDrive.exe"}
	var out []proto.Process
	for i := range 120 {
		out = append(out, proto.Process{PID: 100 + i*4, PPID: 4, Name: names[i%len(names)], User: "SYSTEM", CPUPercent: 0.1, RSSBytes: 20 << 20})
	}
	return out
}

func runWatchdogs(ctx context.Context, o runOptions, wo watchdogOptions, dataDir string) (*watchdogResult, error) {
	if err := os.RemoveAll(dataDir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return nil, err
	}
	abs, _ := filepath.Abs(dataDir)
	cluster, err := devpostgres.Start(ctx, devpostgres.Options{Dir: filepath.Join(abs, "postgres")})
	if err != nil {
		return nil, fmt.Errorf("private postgres: %w", err)
	}
	defer cluster.Stop()
	port, tport := freePort(), freePort()
	engine, err := startEngine(ctx, o.engineBin, dataDir, port, tport, "DATABASE_URL="+cluster.URL)
	if err != nil {
		return nil, err
	}
	defer func() { stopEngine(engine) }()
	admin := &client{base: fmt.Sprintf("http://127.0.0.1:%d", port)}
	if err := admin.waitReady(ctx, 3*time.Minute); err != nil {
		return nil, fmt.Errorf("engine not ready: %w", err)
	}
	conn, err := pgx.Connect(ctx, cluster.URL)
	if err != nil {
		return nil, err
	}
	defer conn.Close(context.Background())
	watch := &procWatch{pid: engine.Process.Pid, pidFile: filepath.Join(abs, "postgres", "data", "postmaster.pid")}
	if len(clusterPIDs(watch.pidFile)) == 0 {
		return nil, fmt.Errorf("no postmaster in %s", watch.pidFile)
	}

	_, seeded, err := gridSeedFleet(ctx, admin, conn, gridOptions{devices: wo.devices, software: wo.software, sites: wo.sites, seed: wo.seed}, dataDir)
	if err != nil {
		return nil, err
	}
	out := &watchdogResult{Devices: wo.devices, IntervalSeconds: 60, Seed: seeded.Seed}
	// Online for the whole run; CPU under 80%; the inventory's services
	// and processes (the grid seed writes neither).
	svcs, _ := json.Marshal(benchServices())
	procs, _ := json.Marshal(benchProcesses())
	if _, err := conn.Exec(ctx, `UPDATE devices SET last_seen = now() + interval '1 day',
		metrics = jsonb_set(metrics, '{cpu_percent}', to_jsonb(round((metrics->>'cpu_percent')::numeric * 0.8, 1)))`); err != nil {
		return nil, fmt.Errorf("seed heartbeats: %w", err)
	}
	if _, err := conn.Exec(ctx, `UPDATE device_inventory SET services = $1::jsonb, processes = $2::jsonb`, string(svcs), string(procs)); err != nil {
		return nil, fmt.Errorf("seed services: %w", err)
	}
	if _, err := conn.Exec(ctx, "VACUUM ANALYZE"); err != nil {
		return nil, err
	}

	phase := func(name string) phaseUsage {
		fmt.Fprintf(logOut, "watchdogs: sampling %s for %s\n", name, wo.steady)
		s := newSampler(watch)
		sctx, cancel := context.WithTimeout(ctx, wo.steady)
		start := time.Now()
		s.run(sctx, time.Second)
		cancel()
		e, p := s.summary(start, time.Time{}, time.Time{})
		return phaseUsage{Seconds: round(time.Since(start).Seconds(), 0), Engine: e, PG: p, Cores: round(e.CPUCoresMean+p.CPUCoresMean, 3)}
	}
	out.Idle = phase("the idle Engine")

	policies := benchWatchdogs()
	ids := map[string]int64{}
	for _, p := range policies {
		w, err := admin.call(ctx, "POST", "/api/watchdogs", p)
		if err != nil {
			return nil, err
		}
		ids[p["name"].(string)] = int64(w["id"].(float64))
	}
	out.Watchdogs = len(policies)
	// Every watchdog evaluated once (the save's evaluation), then the
	// steady phase.
	if err := waitFor(ctx, 10*time.Minute, func() (bool, error) {
		var n int
		err := conn.QueryRow(ctx, `SELECT count(*) FROM watchdogs WHERE evaluated_at IS NULL`).Scan(&n)
		return n == 0, err
	}); err != nil {
		return nil, fmt.Errorf("first evaluations: %w", err)
	}
	evaluated := func() (map[int64]time.Time, error) {
		rows, err := conn.Query(ctx, `SELECT id, evaluated_at FROM watchdogs`)
		if err != nil {
			return nil, err
		}
		m := map[int64]time.Time{}
		for rows.Next() {
			var id int64
			var at time.Time
			if err := rows.Scan(&id, &at); err != nil {
				return nil, err
			}
			m[id] = at
		}
		return m, rows.Err()
	}
	// Evaluations are counted by watching evaluated_at move.
	counts := map[int64]int{}
	last, err := evaluated()
	if err != nil {
		return nil, err
	}
	cctx, stopCount := context.WithCancel(ctx)
	countDone := make(chan struct{})
	go func() {
		defer close(countDone)
		t := time.NewTicker(2 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-cctx.Done():
				return
			case <-t.C:
			}
			now, err := evaluated()
			if err != nil {
				continue
			}
			for id, at := range now {
				if at.After(last[id]) {
					counts[id]++
				}
			}
			last = now
		}
	}()
	out.Evaluating = phase("the Engine evaluating")
	stopCount()
	<-countDone
	var per []float64
	for _, id := range ids {
		per = append(per, float64(counts[id]))
	}
	out.EvaluationsPerWatchdog = median(per)
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM watchdog_incidents`).Scan(&out.IncidentsAtRest); err != nil {
		return nil, err
	}

	// Probes: devices with no incident, each tripped at its own moment
	// over a minute, so the lag covers every phase of the schedule.
	rows, err := conn.Query(ctx, `SELECT guid FROM devices WHERE NOT EXISTS
		(SELECT 1 FROM watchdog_incidents i WHERE i.device_guid = guid) ORDER BY guid`)
	if err != nil {
		return nil, err
	}
	guids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, err
	}
	r := rand.New(rand.NewPCG(wo.seed, 7))
	r.Shuffle(len(guids), func(i, j int) { guids[i], guids[j] = guids[j], guids[i] })
	if len(guids) < wo.probes+wo.offline {
		return nil, fmt.Errorf("only %d quiet devices", len(guids))
	}
	cpuProbe, offProbe := guids[:wo.probes], guids[wo.probes:wo.probes+wo.offline]
	tripped := map[string]time.Time{}
	silent := map[string]time.Time{}
	fmt.Fprintf(logOut, "watchdogs: tripping %d CPU probes and silencing %d devices over a minute\n", len(cpuProbe), len(offProbe))
	steps := max(len(cpuProbe), len(offProbe))
	tick := time.NewTicker(time.Minute / time.Duration(steps))
	for i := range steps {
		<-tick.C
		if i < len(cpuProbe) {
			var at time.Time
			if err := conn.QueryRow(ctx, `UPDATE devices SET metrics = jsonb_set(metrics, '{cpu_percent}', '99') WHERE guid = $1 RETURNING now()`,
				cpuProbe[i]).Scan(&at); err != nil {
				return nil, err
			}
			tripped[cpuProbe[i]] = at
		}
		if i < len(offProbe) {
			var at time.Time
			if err := conn.QueryRow(ctx, `UPDATE devices SET last_seen = now() WHERE guid = $1 RETURNING now()`, offProbe[i]).Scan(&at); err != nil {
				return nil, err
			}
			silent[offProbe[i]] = at
		}
	}
	tick.Stop()
	lags := func(watchdog int64, from map[string]time.Time) (lagFigures, error) {
		var f lagFigures
		rows, err := conn.Query(ctx, `SELECT device_guid, opened_at FROM watchdog_incidents WHERE watchdog_id = $1`, watchdog)
		if err != nil {
			return f, err
		}
		defer rows.Close()
		var d []float64
		for rows.Next() {
			var g string
			var at time.Time
			if err := rows.Scan(&g, &at); err != nil {
				return f, err
			}
			if t0, ok := from[g]; ok {
				d = append(d, at.Sub(t0).Seconds())
			}
		}
		if err := rows.Err(); err != nil {
			return f, err
		}
		f.N, f.Missing = len(d), len(from)-len(d)
		if len(d) > 0 {
			sort.Float64s(d)
			pct := func(p float64) float64 { return round(d[min(len(d)-1, int(p*float64(len(d))))], 1) }
			f.P50, f.P90, f.P99, f.Max = pct(0.5), pct(0.9), pct(0.99), round(d[len(d)-1], 1)
		}
		return f, nil
	}
	// Every incident open (or give up after ten minutes: missing says how
	// many never opened).
	_ = waitFor(ctx, 10*time.Minute, func() (bool, error) {
		c, err := lags(ids["CPU over 90%"], tripped)
		if err != nil {
			return false, err
		}
		o, err := lags(ids["Offline"], silent)
		return c.Missing == 0 && o.Missing == 0, err
	})
	if out.ConditionLag, err = lags(ids["CPU over 90%"], tripped); err != nil {
		return nil, err
	}
	if out.OfflineDetection, err = lags(ids["Offline"], silent); err != nil {
		return nil, err
	}
	// The Engine runs with its default window (cleanEnv passes no
	// CAIRN_DEVICE_ONLINE_WINDOW).
	out.OnlineWindowSeconds = devices.DefaultOnlineWindow.Seconds()
	return out, nil
}

// waitFor polls cond every second until it holds, fails, or limit passes.
func waitFor(ctx context.Context, limit time.Duration, cond func() (bool, error)) error {
	deadline := time.Now().Add(limit)
	for {
		ok, err := cond()
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not within %s", limit)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}
