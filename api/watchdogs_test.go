package api_test

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/workflowclient"
)

// reportHeartbeat posts a heartbeat with cpu and flushes it.
func (f *fixture) reportHeartbeat(t *testing.T, a *testAgent, cpu float64) {
	t.Helper()
	hb := a.device(t, "POST", proto.PathHeartbeat, proto.Heartbeat{SentAt: time.Now().UTC(), AgentVersion: "1.2.3", BootID: "boot-1",
		Metrics: proto.Metrics{CPUPercent: cpu, MemoryUsedBytes: 1 << 30, MemoryTotalBytes: 4 << 30, UptimeSeconds: 86400, LoggedInUsers: []string{}}})
	require.Equal(t, 200, hb.Status, hb.Raw)
	require.NoError(t, f.engine.devices.Flush(context.Background()))
}

// reportServices posts a details inventory holding services and a disk.
func reportServices(t *testing.T, a *testAgent, hash string, services ...proto.Service) {
	t.Helper()
	inv := proto.Inventory{Services: services, Network: []proto.NetIface{}, Sessions: []proto.Session{}, Processes: []proto.Process{},
		Patches: []proto.PatchEntry{}, Software: []proto.Software{},
		Hardware: &proto.Hardware{Disks: []proto.Disk{{Name: "sda1", Mountpoint: "/", UsedBytes: 50, FreeBytes: 50},
			{Name: "sr0", CDROM: true, Mountpoint: "/media/cdrom", UsedBytes: 700, FreeBytes: 0}}}}
	d := a.device(t, "POST", proto.PathDetails, proto.Details{Hash: hash, CollectedAt: time.Now().UTC(), Inventory: inv})
	require.Equal(t, 200, d.Status, d.Raw)
}

func cpuWatchdog(name string, actions ...map[string]any) map[string]any {
	if actions == nil {
		actions = []map[string]any{}
	}
	return map[string]any{"name": name, "severity": "critical", "targets": map[string]any{"kind": "all"},
		"rules":   []map[string]any{{"subject": "cpu_percent", "operator": "gt", "threshold": 90, "recovery_threshold": 80}},
		"actions": actions}
}

// queue is GET /api/watchdogs/incidents with a query.
func (f *fixture) queue(t *testing.T, token, query string) response {
	t.Helper()
	r := f.do(t, "GET", "/api/watchdogs/incidents"+query, token, nil)
	require.Equal(t, 200, r.Status, r.Raw)
	return r
}

func incidentsOf(r response) []map[string]any {
	var out []map[string]any
	for _, i := range r.Body["incidents"].([]any) {
		out = append(out, i.(map[string]any))
	}
	return out
}

func TestWatchdogRoutes(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.sudo(t, f.admin(t))
	siteA := f.createSite(t, admin, "wd-a")
	siteB := f.createSite(t, admin, "wd-b")
	a := f.enrolled(t, admin, siteA, "wd-01")
	f.reportHeartbeat(t, a, 95)
	reportServices(t, a, "h1", proto.Service{Name: "nginx", State: "running"})
	other := f.scopedOperatorOf(t, admin, "wd-b-op", siteB)
	stream := openStream(t, f.url, admin)
	otherStream := openStream(t, f.url, other)

	t.Run("validation", func(t *testing.T) {
		for _, c := range []struct {
			field string
			body  map[string]any
		}{
			{"severity", with(cpuWatchdog("x"), map[string]any{"severity": "urgent"})},
			{"name", with(cpuWatchdog(""), nil)},
			{"targets.kind", with(cpuWatchdog("x"), map[string]any{"targets": map[string]any{"kind": "some"}})},
			{"rules[0].threshold", with(cpuWatchdog("x"), map[string]any{"rules": []map[string]any{{"subject": "cpu_percent", "operator": "gt"}}})},
			{"rules[0].subject", with(cpuWatchdog("x"), map[string]any{"rules": []map[string]any{{"subject": "temperature", "operator": "gt"}}})},
			{"targets.device_guids", with(cpuWatchdog("x"), map[string]any{"targets": map[string]any{"kind": "devices", "device_guids": []string{"nope"}}})},
			{"site_ids", with(cpuWatchdog("x"), map[string]any{"site_ids": []int64{987654}})},
			{"actions[0].service_action", cpuWatchdog("x", map[string]any{"type": "service_control", "service": "nginx", "service_action": "kill"})},
		} {
			r := f.do(t, "POST", "/api/watchdogs", admin, c.body)
			require.Equal(t, 400, r.Status, "%s: %s", c.field, r.Raw)
			require.Equal(t, "validation_failed", r.Body["error"], c.field)
			require.NotEmpty(t, r.field(c.field), "%s: %s", c.field, r.Raw)
		}
		// A scoped operator cannot save a watchdog for every site.
		r := f.do(t, "POST", "/api/watchdogs", other, cpuWatchdog("mine"))
		require.Equal(t, 400, r.Status, r.Raw)
		require.NotEmpty(t, r.field("site_ids"))
		list := f.do(t, "GET", "/api/watchdogs", admin, nil)
		require.Empty(t, list.Body["watchdogs"], "nothing half-saved")
	})

	md := f.do(t, "GET", "/api/watchdogs/metadata", admin, nil)
	require.Equal(t, 200, md.Status, md.Raw)
	require.Contains(t, md.Raw, `"storage_percent"`)
	require.Contains(t, md.Raw, "CD-ROM drives ignored")

	pv := f.do(t, "POST", "/api/watchdogs/preview", admin, cpuWatchdog("preview"))
	require.Equal(t, 200, pv.Status, pv.Raw)
	require.EqualValues(t, 1, pv.Body["targets"])
	require.EqualValues(t, 1, pv.Body["matched"])
	require.Empty(t, incidentsOf(f.queue(t, admin, "")), "a preview opens nothing")

	// Saving makes it live and evaluates it at once: the incident opens,
	// its workflow sends the toast and records the outcome.
	c := f.do(t, "POST", "/api/watchdogs", admin, cpuWatchdog("CPU hot", map[string]any{"type": "toast"}))
	require.Equal(t, 201, c.Status, c.Raw)
	id := int64(c.Body["id"].(float64))
	require.Equal(t, true, c.Body["enabled"])
	next(t, stream, "watchdog_incidents_changed")
	var inc map[string]any
	require.Eventually(t, func() bool {
		list := incidentsOf(f.queue(t, admin, "?state=Open"))
		if len(list) == 1 && len(list[0]["outcomes"].([]any)) == 1 {
			inc = list[0]
			return true
		}
		return false
	}, time.Minute, 100*time.Millisecond, "%s", f.queue(t, admin, "").Raw)
	incID := int64(inc["id"].(float64))
	require.Equal(t, a.guid, inc["guid"])
	require.Equal(t, "wd-01", inc["hostname"])
	require.Equal(t, "CPU hot on wd-01", inc["title"])
	require.Equal(t, "critical", inc["severity"])
	require.EqualValues(t, siteA, inc["site_id"])
	require.EqualValues(t, 95, inc["sampled"].([]any)[0].(map[string]any)["value"])
	require.Equal(t, "succeeded", inc["outcomes"].([]any)[0].(map[string]any)["status"])
	toast := next(t, stream, "service_notification")
	require.Equal(t, "CPU hot on wd-01", toast.Data["message"])
	require.Equal(t, "error", toast.Data["variant"])
	q := f.queue(t, admin, "")
	require.EqualValues(t, 1, q.Body["by_state"].(map[string]any)["Open"])
	require.EqualValues(t, 1, q.Body["total"])
	bad := f.do(t, "GET", "/api/watchdogs/incidents?state=Closed", admin, nil)
	require.Equal(t, 400, bad.Status, bad.Raw)
	require.NotEmpty(t, bad.field("state"))

	t.Run("out of scope", func(t *testing.T) {
		require.Empty(t, f.do(t, "GET", "/api/watchdogs", other, nil).Body["watchdogs"])
		require.Equal(t, 404, f.do(t, "GET", fmt.Sprintf("/api/watchdogs/%d", id), other, nil).Status)
		require.Equal(t, 404, f.do(t, "PUT", fmt.Sprintf("/api/watchdogs/%d", id), other, cpuWatchdog("x")).Status)
		require.Equal(t, 404, f.do(t, "DELETE", fmt.Sprintf("/api/watchdogs/%d", id), other, nil).Status)
		require.Empty(t, incidentsOf(f.queue(t, other, "")))
		require.Equal(t, 404, f.do(t, "POST", fmt.Sprintf("/api/watchdogs/incidents/%d/acknowledge", incID), other, nil).Status)
		require.Equal(t, 404, f.do(t, "POST", fmt.Sprintf("/api/watchdogs/incidents/%d/state", incID), other,
			map[string]any{"state": "Suppressed", "reason": "x"}).Status)
		require.Equal(t, 404, f.do(t, "GET", "/api/devices/"+a.guid+"/watchdogs", other, nil).Status)
		require.Equal(t, 404, f.do(t, "POST", "/api/devices/"+a.guid+"/watchdogs/overrides", other,
			map[string]any{"watchdog_id": id, "muted": true, "reason": "x"}).Status)
		require.Equal(t, 404, f.do(t, "GET", "/api/watchdogs/99999", admin, nil).Status)
		require.Equal(t, 404, f.do(t, "POST", "/api/watchdogs/incidents/99999/acknowledge", admin, nil).Status)
	})

	incPath := fmt.Sprintf("/api/watchdogs/incidents/%d", incID)
	t.Run("suppression without a reason leaves it Open", func(t *testing.T) {
		for _, reason := range []string{"", "   "} {
			r := f.do(t, "POST", incPath+"/state", admin, map[string]any{"state": "Suppressed", "reason": reason})
			require.Equal(t, 400, r.Status, r.Raw)
			require.NotEmpty(t, r.field("reason"))
		}
		require.Equal(t, "Open", incidentsOf(f.queue(t, admin, ""))[0]["state"])
		r := f.do(t, "POST", incPath+"/state", admin, map[string]any{"state": "Gone"})
		require.Equal(t, 400, r.Status, r.Raw)
		require.NotEmpty(t, r.field("state"))
	})

	t.Run("acknowledge and suppress", func(t *testing.T) {
		r := f.do(t, "POST", incPath+"/acknowledge", admin, nil)
		require.Equal(t, 200, r.Status, r.Raw)
		require.Equal(t, "Acknowledged", r.Body["state"])
		require.NotEmpty(t, r.Body["acknowledged_by"])
		ev := next(t, stream, "watchdog_incidents_changed")
		require.Equal(t, "Acknowledged", ev.Data["state"])
		again := f.do(t, "POST", incPath+"/acknowledge", admin, nil)
		require.Equal(t, 409, again.Status, again.Raw)
		require.Equal(t, "incident_state_conflict", again.Body["error"])
		open := f.do(t, "POST", incPath+"/state", admin, map[string]any{"state": "Open"})
		require.Equal(t, 409, open.Status, open.Raw)

		r = f.do(t, "POST", incPath+"/state", admin, map[string]any{"state": "Suppressed", "reason": "maintenance"})
		require.Equal(t, 200, r.Status, r.Raw)
		require.Equal(t, "Suppressed", r.Body["state"])
		require.Equal(t, "maintenance", r.Body["suppress_reason"])
		r = f.do(t, "POST", incPath+"/state", admin, map[string]any{"state": "Open"})
		require.Equal(t, 200, r.Status, r.Raw)
		require.Equal(t, "Open", r.Body["state"])
	})

	t.Run("device tab and overrides", func(t *testing.T) {
		tab := f.do(t, "GET", "/api/devices/"+a.guid+"/watchdogs", admin, nil)
		require.Equal(t, 200, tab.Status, tab.Raw)
		rows := tab.Body["watchdogs"].([]any)
		require.Len(t, rows, 1)
		row := rows[0].(map[string]any)
		require.Equal(t, true, row["targeted"])
		require.Nil(t, row["override"])
		require.Equal(t, "Open", row["incident"].(map[string]any)["state"])

		blank := f.do(t, "POST", "/api/devices/"+a.guid+"/watchdogs/overrides", admin, map[string]any{"watchdog_id": id, "muted": true, "reason": " "})
		require.Equal(t, 400, blank.Status, blank.Raw)
		require.NotEmpty(t, blank.field("reason"))
		set := f.do(t, "POST", "/api/devices/"+a.guid+"/watchdogs/overrides", admin, map[string]any{"watchdog_id": id, "muted": true, "reason": "load test"})
		require.Equal(t, 200, set.Status, set.Raw)
		row = set.Body["watchdogs"].([]any)[0].(map[string]any)
		require.Equal(t, "load test", row["override"].(map[string]any)["reason"])
		require.Equal(t, "Suppressed", row["incident"].(map[string]any)["state"], "the override suppresses the active incident")
		ev := next(t, stream, "device_watchdogs_changed")
		require.Equal(t, a.guid, ev.Data["guid"])
		clear := f.do(t, "POST", "/api/devices/"+a.guid+"/watchdogs/overrides", admin, map[string]any{"watchdog_id": id, "muted": false})
		require.Equal(t, 200, clear.Status, clear.Raw)
		require.Nil(t, clear.Body["watchdogs"].([]any)[0].(map[string]any)["override"])
	})

	// The condition clears below the recovery threshold; the save of an
	// update evaluates at once and resolves the incident, which ends its
	// workflow.
	f.reportHeartbeat(t, a, 50)
	u := f.do(t, "PUT", fmt.Sprintf("/api/watchdogs/%d", id), admin, with(cpuWatchdog("CPU hot", map[string]any{"type": "toast"}),
		map[string]any{"description": "edited"}))
	require.Equal(t, 200, u.Status, u.Raw)
	require.EqualValues(t, 2, u.Body["revision"])
	require.Eventually(t, func() bool {
		list := incidentsOf(f.queue(t, admin, "?state=Resolved"))
		return len(list) == 1 && list[0]["resolve_reason"] == "condition_cleared"
	}, time.Minute, 100*time.Millisecond)
	require.Eventually(t, func() bool {
		d, err := temporalClient.DescribeWorkflowExecution(context.Background(), f.engineQueue+fmt.Sprintf("/incident:%d", incID), "")
		return err == nil && d.WorkflowExecutionInfo.CloseTime != nil
	}, time.Minute, 100*time.Millisecond, "the incident's workflow ends on resolve")

	// A second start of the incident's workflow (a maintenance run after
	// a kill between commit and start) runs no action again.
	st := workflowclient.WatchdogStarter{Client: temporalClient, TaskQueue: f.engineQueue, Prefix: f.engineQueue + "/"}
	require.NoError(t, st.StartIncident(context.Background(), incID))
	none(t, stream, "service_notification", 2*time.Second)
	resolved := incidentsOf(f.queue(t, admin, ""))
	require.Len(t, resolved[0]["outcomes"], 1)

	// The operator of the other site heard of none of it.
	drain := time.After(time.Second)
	for done := false; !done; {
		select {
		case e := <-otherStream:
			require.NotContains(t, []string{"device_watchdogs_changed", "service_notification"}, e.Type, "%v", e.Data)
			require.Nil(t, e.Data["incident_id"], "%s %v", e.Type, e.Data)
		case <-drain:
			done = true
		}
	}

	del := f.do(t, "DELETE", fmt.Sprintf("/api/watchdogs/%d", id), admin, nil)
	require.Equal(t, 204, del.Status, del.Raw)
	require.Equal(t, 404, f.do(t, "GET", fmt.Sprintf("/api/watchdogs/%d", id), admin, nil).Status)
	require.Empty(t, incidentsOf(f.queue(t, admin, "")), "deleting removes its runtime state")
}

// TestWatchdogRestartsAStoppedService: a real agent's init-script service
// stops; the watchdog's incident restarts it through the command path
// (DeviceOperation on the agent's socket), and the next evaluation sees it
// running and resolves the incident.
func TestWatchdogRestartsAStoppedService(t *testing.T) {
	t.Parallel()
	f := setup(t)
	admin := f.sudo(t, f.admin(t))
	site := f.createSite(t, admin, "wd-svc")
	o := f.opsAgent(t, admin, site, "wd-svc-01")
	initScript(t, o.initDir, "cairn-wd")
	require.NoError(t, exec.Command(filepath.Join(o.initDir, "cairn-wd"), "stop").Run())
	reportServices(t, o.testAgent, "h1", proto.Service{Name: "cairn-wd", State: "stopped"})
	// Its services count only while it reports: rules on a device's
	// current state are unknown while it is offline.
	f.reportHeartbeat(t, o.testAgent, 10)

	c := f.do(t, "POST", "/api/watchdogs", admin, map[string]any{"name": "cairn-wd down", "severity": "warning",
		"site_ids": []int64{site}, "targets": map[string]any{"kind": "devices", "device_guids": []string{o.guid}},
		"rules":   []map[string]any{{"subject": "service", "operator": "not_running", "target": "cairn-wd"}},
		"actions": []map[string]any{{"type": "service_control", "service": "cairn-wd", "service_action": "restart"}}})
	require.Equal(t, 201, c.Status, c.Raw)
	id := int64(c.Body["id"].(float64))

	var inc map[string]any
	require.Eventually(t, func() bool {
		list := incidentsOf(f.queue(t, admin, ""))
		if len(list) == 1 && len(list[0]["outcomes"].([]any)) == 1 {
			inc = list[0]
			return true
		}
		return false
	}, time.Minute, 100*time.Millisecond)
	outcome := inc["outcomes"].([]any)[0].(map[string]any)
	require.Equal(t, "succeeded", outcome["status"], "%v", outcome)
	require.Equal(t, 1, o.count(proto.EventServiceControl), "the restart was sent once")
	require.NoError(t, exec.Command(filepath.Join(o.initDir, "cairn-wd"), "status").Run(), "the service runs again")

	// The agent's answer refreshed the stored services: the next
	// evaluation (the save's) sees it running and resolves the incident.
	f.reportHeartbeat(t, o.testAgent, 10)
	u := f.do(t, "PUT", fmt.Sprintf("/api/watchdogs/%d", id), admin, map[string]any{"name": "cairn-wd down", "severity": "warning",
		"site_ids": []int64{site}, "targets": map[string]any{"kind": "devices", "device_guids": []string{o.guid}},
		"rules":   []map[string]any{{"subject": "service", "operator": "not_running", "target": "cairn-wd"}},
		"actions": []map[string]any{{"type": "service_control", "service": "cairn-wd", "service_action": "restart"}}})
	require.Equal(t, 200, u.Status, u.Raw)
	require.Eventually(t, func() bool {
		list := incidentsOf(f.queue(t, admin, "?state=Resolved"))
		return len(list) == 1
	}, time.Minute, 100*time.Millisecond)
	require.Equal(t, 1, o.count(proto.EventServiceControl), "resolving sends nothing more")
}
