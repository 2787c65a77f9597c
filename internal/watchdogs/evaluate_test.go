package watchdogs

import (
	"errors"

	"github.com/cairn-rmm/cairn"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/agent/proto"
)

var t0 = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

func num(v float64) *float64 { return &v }

func policyOf(t *testing.T, match string, noise Noise, rules ...Rule) Policy {
	t.Helper()
	p, err := Policy{Name: "p", Severity: SeverityWarning, Enabled: true, Targets: Targets{Kind: TargetAll}, Match: match,
		Rules: rules, Noise: noise}.check()
	require.NoError(t, err)
	return p
}

// online is a device that sent a heartbeat a moment ago.
func online(m proto.Metrics) Snapshot {
	seen := t0.Add(-5 * time.Second)
	return Snapshot{GUID: "g", Hostname: "h", LastSeen: &seen, Metrics: &m, AgentVersion: "1.4.0", BootID: "boot-1"}
}

const window = 90 * time.Second

// seenAt is snap with its last heartbeat a moment before now: the device
// still reporting at a later evaluation.
func seenAt(snap Snapshot, now time.Time) Snapshot {
	seen := now.Add(-5 * time.Second)
	snap.LastSeen = &seen
	return snap
}

func TestRuleSubjects(t *testing.T) {
	t.Parallel()
	base := online(proto.Metrics{CPUPercent: 95, MemoryUsedBytes: 7, MemoryTotalBytes: 8, UptimeSeconds: 3600,
		LoggedInUsers: []string{"a", "b"}})
	base.Disks = []proto.Disk{
		{Name: "sr0", CDROM: true, Mountpoint: "/media/cdrom", UsedBytes: 100, FreeBytes: 0},
		{Name: "sda1", Mountpoint: "/", UsedBytes: 80, FreeBytes: 20},
		{Name: "sdb1", Mountpoint: "/data", UsedBytes: 10, FreeBytes: 90},
	}
	base.Services = []proto.Service{{Name: "nginx", State: "stopped"}, {Name: "sshd", State: "running"}}
	base.Processes = []proto.Process{{Name: "sshd"}, {Name: "agent.exe"}}
	base.Software = []SoftwareRow{{Name: "firefox", Version: "115.2"}}
	base.Roles = []RoleRow{{Key: "system:rdp", Observed: "Unhealthy"}, {Key: "system:vnc", Observed: "Healthy"}}
	stopped := base
	stopped.Roles = []RoleRow{{Key: "system:remote_shell", Observed: "Stopped"}, {Key: "system:vnc", Observed: "Healthy"}}
	stale := base
	old := t0.Add(-time.Hour)
	stale.LastSeen = &old
	never := Snapshot{GUID: "n", Hostname: "n"}
	noInventory := online(proto.Metrics{})

	cases := []struct {
		name string
		snap Snapshot
		rule Rule
		want bool
	}{
		{"cpu over", base, Rule{Subject: SubjectCPU, Operator: OpGT, Threshold: num(90)}, true},
		{"cpu under", base, Rule{Subject: SubjectCPU, Operator: OpGT, Threshold: num(96)}, false},
		{"cpu without heartbeat", never, Rule{Subject: SubjectCPU, Operator: OpGT, Threshold: num(0)}, false},
		{"memory 87.5%", base, Rule{Subject: SubjectMemory, Operator: OpGTE, Threshold: num(87.5)}, true},
		{"memory below", base, Rule{Subject: SubjectMemory, Operator: OpGT, Threshold: num(90)}, false},
		// The CD-ROM is full, the fullest disk is / at 80%.
		{"storage ignores the CD-ROM", base, Rule{Subject: SubjectStorage, Operator: OpGT, Threshold: num(85)}, false},
		{"storage fullest volume", base, Rule{Subject: SubjectStorage, Operator: OpGTE, Threshold: num(80)}, true},
		{"storage by mountpoint", base, Rule{Subject: SubjectStorage, Operator: OpGT, Threshold: num(50), Target: "/data"}, false},
		{"storage of the CD-ROM's mountpoint", base, Rule{Subject: SubjectStorage, Operator: OpGT, Threshold: num(1), Target: "/media/cdrom"}, false},
		{"uptime under", base, Rule{Subject: SubjectUptime, Operator: OpLT, Threshold: num(7200)}, true},
		{"sessions", base, Rule{Subject: SubjectSessions, Operator: OpGTE, Threshold: num(2)}, true},
		{"service stopped", base, Rule{Subject: SubjectService, Operator: OpNotRunning, Target: "NGINX"}, true},
		{"service running", base, Rule{Subject: SubjectService, Operator: OpNotRunning, Target: "sshd"}, false},
		{"service missing", base, Rule{Subject: SubjectService, Operator: OpMissing, Target: "cron"}, true},
		{"missing service is not 'not running'", base, Rule{Subject: SubjectService, Operator: OpNotRunning, Target: "cron"}, false},
		{"services not collected", noInventory, Rule{Subject: SubjectService, Operator: OpMissing, Target: "cron"}, false},
		{"process missing", base, Rule{Subject: SubjectProcess, Operator: OpMissing, Target: "nginx"}, true},
		{"process present", base, Rule{Subject: SubjectProcess, Operator: OpMissing, Target: "sshd"}, false},
		{"process with .exe", base, Rule{Subject: SubjectProcess, Operator: OpPresent, Target: "agent"}, true},
		{"software missing", base, Rule{Subject: SubjectSoftware, Operator: OpMissing, Target: "Chrome"}, true},
		{"software present", base, Rule{Subject: SubjectSoftware, Operator: OpPresent, Target: "Firefox"}, true},
		{"software old", base, Rule{Subject: SubjectSoftware, Operator: OpVersionLT, Target: "firefox", Value: "115.10"}, true},
		{"software new enough", base, Rule{Subject: SubjectSoftware, Operator: OpVersionLT, Target: "firefox", Value: "115.2"}, false},
		{"agent old", base, Rule{Subject: SubjectAgentVersion, Operator: OpVersionLT, Value: "1.10.0"}, true},
		{"agent current", base, Rule{Subject: SubjectAgentVersion, Operator: OpVersionLT, Value: "1.4"}, false},
		{"role unhealthy", base, Rule{Subject: SubjectRoleHealth, Operator: OpUnhealthy}, true},
		{"named role healthy", base, Rule{Subject: SubjectRoleHealth, Operator: OpUnhealthy, Target: "system:vnc"}, false},
		{"role stopped by an operator", stopped, Rule{Subject: SubjectRoleHealth, Operator: OpUnhealthy}, false},
		{"offline: silent", stale, Rule{Subject: SubjectOffline, Operator: OpIs}, true},
		{"offline: never seen", never, Rule{Subject: SubjectOffline, Operator: OpIs}, true},
		{"online", base, Rule{Subject: SubjectOffline, Operator: OpIs}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			p := policyOf(t, MatchAll, Noise{}, c.rule)
			d := Evaluate(p, c.snap, State{}, t0, window)
			require.Equal(t, c.want, d.Matched, "%+v", d.Samples)
			require.Equal(t, c.want, d.Kind == DecideOpen)
		})
	}
}

func TestRebootDetection(t *testing.T) {
	t.Parallel()
	p := policyOf(t, MatchAll, Noise{}, Rule{Subject: SubjectRebooted, Operator: OpIs})
	snap := online(proto.Metrics{UptimeSeconds: 10})
	d := Evaluate(p, snap, State{}, t0, window)
	require.False(t, d.Matched, "the first evaluation knows no earlier boot")
	snap.BootID = "boot-2"
	d = Evaluate(p, snap, d.Next, t0.Add(time.Minute), window)
	require.True(t, d.Matched)
	require.Equal(t, DecideOpen, d.Kind)
}

func TestHysteresis(t *testing.T) {
	t.Parallel()
	p := policyOf(t, MatchAll, Noise{}, Rule{Subject: SubjectCPU, Operator: OpGT, Threshold: num(90), RecoveryThreshold: num(70)})
	st := State{}
	step := func(cpu float64) Decision {
		d := Evaluate(p, online(proto.Metrics{CPUPercent: cpu}), st, t0, window)
		st = d.Next
		if d.Kind == DecideOpen {
			st.Active = &ActiveIncident{ID: 1, State: StateOpen}
		}
		return d
	}
	require.Equal(t, DecideNone, step(80).Kind, "under the threshold")
	require.Equal(t, DecideOpen, step(95).Kind)
	require.Equal(t, DecideTouch, step(80).Kind, "80 is above the recovery threshold: still matching")
	require.Equal(t, DecideResolve, step(60).Kind)
	require.Equal(t, DecideNone, step(80).Kind, "without an incident 80 is under the threshold again")
}

func TestNoiseControls(t *testing.T) {
	t.Parallel()
	cpu := Rule{Subject: SubjectCPU, Operator: OpGT, Threshold: num(90)}
	hot := online(proto.Metrics{CPUPercent: 99, UptimeSeconds: 3600})
	cool := online(proto.Metrics{CPUPercent: 10, UptimeSeconds: 3600})

	t.Run("consecutive matches", func(t *testing.T) {
		t.Parallel()
		p := policyOf(t, MatchAll, Noise{ConsecutiveMatches: 3}, cpu)
		st := State{}
		var kinds []string
		for i, snap := range []Snapshot{hot, hot, cool, hot, hot, hot} {
			now := t0.Add(time.Duration(i) * time.Minute)
			d := Evaluate(p, seenAt(snap, now), st, now, window)
			kinds, st = append(kinds, d.Kind), d.Next
		}
		require.Equal(t, []string{"", "", "", "", "", DecideOpen}, kinds, "a clear evaluation restarts the count")
	})
	t.Run("rule window", func(t *testing.T) {
		t.Parallel()
		r := cpu
		r.ForSeconds = 300
		p := policyOf(t, MatchAll, Noise{}, r)
		st := State{}
		var kinds []string
		for _, m := range []int{0, 2, 4, 5} {
			now := t0.Add(time.Duration(m) * time.Minute)
			d := Evaluate(p, seenAt(hot, now), st, now, window)
			kinds, st = append(kinds, d.Kind), d.Next
		}
		require.Equal(t, []string{"", "", "", DecideOpen}, kinds, "CPU over 90%% for 5 minutes")
	})
	t.Run("cooldown", func(t *testing.T) {
		t.Parallel()
		p := policyOf(t, MatchAll, Noise{CooldownSeconds: 600}, cpu)
		resolved := t0.Add(-5 * time.Minute)
		d := Evaluate(p, hot, State{LastResolvedAt: &resolved}, t0, window)
		require.True(t, d.Matched)
		require.Equal(t, DecideNone, d.Kind, "inside the cooldown")
		d = Evaluate(p, seenAt(hot, t0.Add(6*time.Minute)), d.Next, t0.Add(6*time.Minute), window)
		require.Equal(t, DecideOpen, d.Kind)
	})
	t.Run("boot grace", func(t *testing.T) {
		t.Parallel()
		p := policyOf(t, MatchAll, Noise{BootGraceSeconds: 600}, cpu)
		booting := online(proto.Metrics{CPUPercent: 99, UptimeSeconds: 120})
		require.Equal(t, DecideNone, Evaluate(p, booting, State{}, t0, window).Kind)
		require.Equal(t, DecideOpen, Evaluate(p, hot, State{}, t0, window).Kind)
	})
	t.Run("auto-resolve delay keeps a flapping incident open", func(t *testing.T) {
		t.Parallel()
		p := policyOf(t, MatchAll, Noise{AutoResolveSeconds: 300}, cpu)
		st := State{Active: &ActiveIncident{ID: 7, State: StateAcknowledged}}
		var kinds []string
		for i, snap := range []Snapshot{cool, hot, cool, cool, cool} {
			now := t0.Add(time.Duration(i*3) * time.Minute)
			d := Evaluate(p, seenAt(snap, now), st, now, window)
			kinds, st = append(kinds, d.Kind), d.Next
		}
		// cleared at 0, matched at 3, cleared from 6: resolved at 12.
		require.Equal(t, []string{"", DecideTouch, "", "", DecideResolve}, kinds)
	})
	t.Run("stale telemetry", func(t *testing.T) {
		t.Parallel()
		p := policyOf(t, MatchAll, Noise{StaleSeconds: 600}, cpu)
		silent := hot
		old := t0.Add(-time.Hour)
		silent.LastSeen = &old
		d := Evaluate(p, silent, State{Active: &ActiveIncident{ID: 7, State: StateOpen}}, t0, window)
		require.Equal(t, DecideResolve, d.Kind)
		require.Equal(t, ReasonStale, d.Reason)
		require.Equal(t, DecideNone, Evaluate(p, silent, State{}, t0, window).Kind, "no incident on stale data")
	})
	t.Run("an offline device's last values neither open nor clear", func(t *testing.T) {
		t.Parallel()
		p := policyOf(t, MatchAll, Noise{BootGraceSeconds: 600}, Rule{Subject: SubjectUptime, Operator: OpLT, Threshold: num(300)})
		silent := online(proto.Metrics{UptimeSeconds: 60})
		old := t0.Add(-10 * time.Minute)
		silent.LastSeen = &old
		d := Evaluate(p, silent, State{}, t0, window)
		require.False(t, d.Matched)
		require.Equal(t, DecideNone, d.Kind, "a stopped agent's last uptime is not a boot")

		silentHot := hot
		silentHot.LastSeen = &old
		p = policyOf(t, MatchAll, Noise{}, cpu)
		require.Equal(t, DecideNone, Evaluate(p, silentHot, State{}, t0, window).Kind, "no incident on an offline device's last CPU")
		st := State{Active: &ActiveIncident{ID: 7, State: StateOpen}}
		for i := range 3 {
			d = Evaluate(p, silentHot, st, t0.Add(time.Duration(i)*time.Hour), window)
			require.Equal(t, DecideNone, d.Kind, "nor is one cleared while the device is silent")
			st = d.Next
		}
		require.NotNil(t, st.Active)
		d = Evaluate(p, seenAt(hot, t0.Add(4*time.Hour)), st, t0.Add(4*time.Hour), window)
		require.Equal(t, DecideTouch, d.Kind, "back online and still hot")

		mixed := policyOf(t, MatchAny, Noise{}, cpu, Rule{Subject: SubjectOffline, Operator: OpIs})
		require.Equal(t, DecideOpen, Evaluate(mixed, silentHot, State{}, t0, window).Kind, "the offline rule still sees it")
	})
	t.Run("muted", func(t *testing.T) {
		t.Parallel()
		p := policyOf(t, MatchAll, Noise{}, cpu)
		require.Equal(t, DecideNone, Evaluate(p, hot, State{Muted: true}, t0, window).Kind)
	})
	t.Run("any and all", func(t *testing.T) {
		t.Parallel()
		mem := Rule{Subject: SubjectMemory, Operator: OpGT, Threshold: num(90)}
		snap := online(proto.Metrics{CPUPercent: 99, MemoryUsedBytes: 1, MemoryTotalBytes: 4})
		require.False(t, Evaluate(policyOf(t, MatchAll, Noise{}, cpu, mem), snap, State{}, t0, window).Matched)
		require.True(t, Evaluate(policyOf(t, MatchAny, Noise{}, cpu, mem), snap, State{}, t0, window).Matched)
	})
}

func TestOfflineIncidentIsPurgedOnCheckIn(t *testing.T) {
	t.Parallel()
	p := policyOf(t, MatchAll, Noise{}, Rule{Subject: SubjectOffline, Operator: OpIs})
	silent := online(proto.Metrics{})
	old := t0.Add(-time.Hour)
	silent.LastSeen = &old
	d := Evaluate(p, silent, State{}, t0, window)
	require.Equal(t, DecideOpen, d.Kind)
	require.True(t, d.OfflineOnly)
	st := d.Next
	st.Active = &ActiveIncident{ID: 1, State: StateOpen, OfflineOnly: true}
	d = Evaluate(p, online(proto.Metrics{}), st, t0.Add(time.Minute), window)
	require.Equal(t, DecidePurge, d.Kind)
}

func TestPolicyValidation(t *testing.T) {
	t.Parallel()
	good := func() Policy {
		return Policy{Name: "Disk", Severity: SeverityCritical, Targets: Targets{Kind: TargetAll},
			Rules: []Rule{{Subject: SubjectStorage, Operator: OpGT, Threshold: num(90), RecoveryThreshold: num(85)}}}
	}
	_, err := good().check()
	require.NoError(t, err)
	cases := []struct {
		field string
		edit  func(p *Policy)
	}{
		{"name", func(p *Policy) { p.Name = "  " }},
		{"severity", func(p *Policy) { p.Severity = "urgent" }},
		{"site_ids", func(p *Policy) { p.SiteIDs = []int64{} }},
		{"targets.kind", func(p *Policy) { p.Targets.Kind = "some" }},
		{"targets.device_guids", func(p *Policy) { p.Targets.Kind = TargetDevices }},
		{"targets.filter_ids", func(p *Policy) { p.Targets.Kind = TargetFilters }},
		{"match", func(p *Policy) { p.Match = "most" }},
		{"rules", func(p *Policy) { p.Rules = nil }},
		{"rules[0].subject", func(p *Policy) { p.Rules[0].Subject = "temperature" }},
		{"rules[0].operator", func(p *Policy) { p.Rules[0].Operator = OpMissing }},
		{"rules[0].threshold", func(p *Policy) { p.Rules[0].Threshold = nil }},
		{"rules[0].threshold", func(p *Policy) { p.Rules[0].Threshold = num(120) }},
		{"rules[0].recovery_threshold", func(p *Policy) { p.Rules[0].RecoveryThreshold = num(95) }},
		{"rules[0].for_seconds", func(p *Policy) { p.Rules[0].ForSeconds = -1 }},
		{"rules[0].target", func(p *Policy) { p.Rules[0] = Rule{Subject: SubjectService, Operator: OpNotRunning} }},
		{"rules[0].value", func(p *Policy) { p.Rules[0] = Rule{Subject: SubjectAgentVersion, Operator: OpVersionLT} }},
		{"noise.interval_seconds", func(p *Policy) { p.Noise.IntervalSeconds = 5 }},
		{"noise.consecutive_matches", func(p *Policy) { p.Noise.ConsecutiveMatches = -1 }},
		{"noise.cooldown_seconds", func(p *Policy) { p.Noise.CooldownSeconds = -1 }},
		{"actions[0].type", func(p *Policy) { p.Actions = []Action{{Type: "email"}} }},
		{"actions[0].service", func(p *Policy) { p.Actions = []Action{{Type: ActionServiceControl, ServiceAction: "restart"}} }},
		{"actions[0].service_action", func(p *Policy) {
			p.Actions = []Action{{Type: ActionServiceControl, Service: "nginx", ServiceAction: "kill"}}
		}},
	}
	for _, c := range cases {
		p := good()
		c.edit(&p)
		_, err := p.check()
		require.Error(t, err, c.field)
		fields := fieldsOf(err)
		require.Contains(t, fields, c.field, "%v", err)
	}
}

func fieldsOf(err error) map[string]string {
	var e *cairn.Error
	if errors.As(err, &e) {
		return e.Fields
	}
	return nil
}
