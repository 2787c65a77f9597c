package patches_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/internal/patches"
)

func intp(n int) *int { return &n }

func sitep(n int64) *cairn.SiteID { s := cairn.SiteID(n); return &s }

func rule(rt, mt, v, action string) patches.Rule {
	return patches.Rule{RuleType: rt, MatchType: mt, Value: v, Action: action}
}

func TestPolicyCheck(t *testing.T) {
	t.Parallel()
	ok := func() patches.PolicyInput {
		return patches.PolicyInput{Name: "Servers", Type: patches.TypeSite, RoleScope: patches.RoleServer, SiteID: sitep(1)}
	}
	cases := []struct {
		name  string
		edit  func(*patches.PolicyInput)
		field string
	}{
		{"valid", func(*patches.PolicyInput) {}, ""},
		{"no name", func(p *patches.PolicyInput) { p.Name = " " }, "name"},
		{"global create type", func(p *patches.PolicyInput) { p.Type = "fleet" }, "type"},
		{"site without site", func(p *patches.PolicyInput) { p.SiteID = nil }, "site_id"},
		{"filter without filter", func(p *patches.PolicyInput) { p.Type, p.SiteID = patches.TypeDeviceFilter, nil }, "device_filter_id"},
		{"role", func(p *patches.PolicyInput) { p.RoleScope = "Laptop" }, "role_scope"},
		{"global with a site", func(p *patches.PolicyInput) { p.Type = patches.TypeGlobal }, "site_id"},
		{"site with a filter", func(p *patches.PolicyInput) { p.DeviceFilterID = new(int64) }, "device_filter_id"},
		{"rule type", func(p *patches.PolicyInput) { p.Rules = []patches.Rule{rule("vendor", "equals", "x", "approve")} }, "rules[0].rule_type"},
		{"match type of rule type", func(p *patches.PolicyInput) {
			p.Rules = []patches.Rule{rule("kb", "title_contains", "KB1", "approve")}
		}, "rules[0].match_type"},
		{"action", func(p *patches.PolicyInput) { p.Rules = []patches.Rule{rule("kb", "equals", "KB1", "maybe")} }, "rules[0].action"},
		{"empty value", func(p *patches.PolicyInput) { p.Rules = []patches.Rule{rule("kb", "equals", "kb", "approve")} }, "rules[0].value"},
		{"approve and block the same", func(p *patches.PolicyInput) {
			p.Rules = []patches.Rule{rule("kb", "equals", "KB1", "approve"), rule("kb", "equals", "kb1", "block")}
		}, "rules[1]"},
		{"hostname exclusion without site", func(p *patches.PolicyInput) {
			p.Exclusions = []patches.Exclusion{{Hostname: "web1"}}
		}, "exclusions[0].site_id"},
		{"empty exclusion", func(p *patches.PolicyInput) { p.Exclusions = []patches.Exclusion{{}} }, "exclusions[0]"},
		{"deferral", func(p *patches.PolicyInput) { p.Defaults.DeferralDays = intp(-1) }, "defaults.deferral_days"},
		{"reboot", func(p *patches.PolicyInput) { p.Defaults.RebootPolicy = "sometimes" }, "defaults.reboot_policy"},
		{"zone", func(p *patches.PolicyInput) {
			p.MaintenanceWindow = &patches.Window{TimeZone: "Mars/Olympus", Ranges: []patches.WindowRange{{Weekday: "monday", Start: "01:00", End: "02:00"}}}
		}, "maintenance_window.time_zone"},
		{"no ranges", func(p *patches.PolicyInput) { p.MaintenanceWindow = &patches.Window{} }, "maintenance_window.ranges"},
		{"weekday", func(p *patches.PolicyInput) {
			p.MaintenanceWindow = &patches.Window{Ranges: []patches.WindowRange{{Weekday: "someday", Start: "01:00", End: "02:00"}}}
		}, "maintenance_window.ranges[0].weekday"},
		{"end before start", func(p *patches.PolicyInput) {
			p.MaintenanceWindow = &patches.Window{Ranges: []patches.WindowRange{{Weekday: "monday", Start: "03:00", End: "02:00"}}}
		}, "maintenance_window.ranges[0].end"},
		{"week of month", func(p *patches.PolicyInput) {
			p.MaintenanceWindow = &patches.Window{Ranges: []patches.WindowRange{{Weekday: "monday", WeekOfMonth: 5, Start: "01:00", End: "02:00"}}}
		}, "maintenance_window.ranges[0].week_of_month"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			in := ok()
			tc.edit(&in)
			_, err := in.Check()
			if tc.field == "" {
				require.NoError(t, err)
				return
			}
			require.True(t, cairn.IsCode(err, cairn.ECodeValidation), "%v", err)
			var e *cairn.Error
			require.ErrorAs(t, err, &e)
			require.Contains(t, e.Fields, tc.field)
		})
	}
}

func TestRuleMatches(t *testing.T) {
	t.Parallel()
	c := patches.Candidate{PatchKey: "KB5034441", KB: "KB5034441", KBs: []string{"KB5034441", "KB5034440"},
		Title: "2026-11 Cumulative Update for Windows 11", Severity: "Critical", Categories: []string{"Security Updates"}, Package: ""}
	deb := patches.Candidate{PatchKey: "apt:hello", Title: "hello 1.1", Package: "hello", Security: true}
	cases := []struct {
		rule patches.Rule
		c    patches.Candidate
		want bool
	}{
		{rule("title", "title_contains", "cumulative UPDATE", "approve"), c, true},
		{rule("title", "title_contains", "preview", "approve"), c, false},
		{rule("title", "equals", "2026-11 cumulative update for windows 11", "approve"), c, true},
		{rule("title", "equals", "Cumulative", "approve"), c, false},
		{rule("kb", "equals", "5034440", "approve"), c, true},
		{rule("kb", "equals", "KB5034441", "approve"), c, true},
		{rule("kb", "equals", "KB1", "approve"), c, false},
		{rule("severity", "equals", "critical", "approve"), c, true},
		{rule("severity", "equals", "Important", "approve"), c, false},
		{rule("category", "equals", "security updates", "approve"), c, true},
		{rule("category", "equals", "security", "approve"), deb, true},
		{rule("category", "equals", "security", "approve"), c, false},
		{rule("package", "equals", "HELLO", "approve"), deb, true},
		{rule("package", "equals", "hello", "approve"), c, false},
	}
	for _, tc := range cases {
		require.Equal(t, tc.want, tc.rule.Matches(tc.c), "%+v on %s", tc.rule, tc.c.PatchKey)
	}
}

func TestEvaluateHierarchy(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 29, 6, 0, 0, 0, time.UTC)
	old := now.Add(-30 * 24 * time.Hour)
	fresh := now.Add(-2 * 24 * time.Hour)
	dev := patches.Device{GUID: "g1", Hostname: "web1", SiteID: 7, Role: patches.RoleServer}
	crit := patches.Candidate{PatchKey: "KB1", KB: "KB1", Title: "Cumulative Update", Severity: "Critical", ReleasedAt: &old}
	low := patches.Candidate{PatchKey: "KB2", KB: "KB2", Title: "Preview Update", Severity: "Low", ReleasedAt: &fresh}
	newCrit := patches.Candidate{PatchKey: "KB3", KB: "KB3", Title: "Fresh Update", Severity: "Critical", ReleasedAt: &fresh}
	global := patches.Policy{ID: 1, Type: patches.TypeGlobal, RoleScope: patches.RoleServer, Enabled: true,
		Rules: []patches.Rule{rule("severity", "equals", "Critical", "approve"), rule("title", "title_contains", "preview", "block")}}
	site := patches.Policy{ID: 2, Type: patches.TypeSite, SiteID: sitep(7), RoleScope: patches.RoleServer, Enabled: true}
	filter := patches.Policy{ID: 3, Type: patches.TypeDeviceFilter, RoleScope: patches.RoleServer, Enabled: true}
	type want struct {
		status string
		layer  string
		policy int64
	}
	cases := []struct {
		name   string
		layers []patches.Policy
		cands  []patches.Candidate
		want   []want
		check  func(t *testing.T, e patches.Effective)
	}{
		{"parent approval propagates down", []patches.Policy{global, site, filter}, []patches.Candidate{crit, low},
			[]want{{"approved", "global", 1}, {"blocked", "global", 1}}, nil},
		{"site blocks what global approves", []patches.Policy{global, with(site, rule("kb", "equals", "KB1", "block")), filter},
			[]patches.Candidate{crit}, []want{{"blocked", "site", 2}}, nil},
		{"filter overrides a parent block", []patches.Policy{global, site, with(filter, rule("kb", "equals", "KB2", "approve"))},
			[]patches.Candidate{low}, []want{{"approved", "device_filter", 3}}, func(t *testing.T, e patches.Effective) {
				require.True(t, e.Decisions[0].OverridesParent)
				require.Equal(t, []int64{1, 3}, e.Decisions[0].LinkedPolicies)
			}},
		{"block beats approve in one layer", []patches.Policy{with(site, rule("severity", "equals", "critical", "approve"), rule("kb", "equals", "KB1", "block"))},
			[]patches.Candidate{crit}, []want{{"blocked", "site", 2}}, nil},
		{"nothing approves", []patches.Policy{site}, []patches.Candidate{crit}, []want{{"not_approved", "", 0}}, nil},
		{"deferral from the deepest layer", []patches.Policy{global, withDeferral(site, 7)}, []patches.Candidate{crit, newCrit},
			[]want{{"approved", "global", 1}, {"deferred", "global", 1}}, func(t *testing.T, e patches.Effective) {
				require.Equal(t, 7, e.DeferralDays)
				require.Equal(t, fresh.Add(7*24*time.Hour), *e.Decisions[1].ApproveAfter)
			}},
		{"site exclusion takes the device out of site and below", []patches.Policy{global, excluding(site, patches.Exclusion{Hostname: "WEB1", SiteID: sitep(7)}), with(filter, rule("kb", "equals", "KB2", "approve"))},
			[]patches.Candidate{crit, low}, []want{{"excluded", "", 0}, {"excluded", "", 0}}, func(t *testing.T, e patches.Effective) {
				require.Equal(t, int64(2), e.ExcludedBy)
				require.False(t, e.Layers[0].Excluded)
				require.True(t, e.Layers[2].Excluded)
			}},
		{"a hostname of another site does not exclude", []patches.Policy{global, excluding(site, patches.Exclusion{Hostname: "web1", SiteID: sitep(8)})},
			[]patches.Candidate{crit}, []want{{"approved", "global", 1}}, nil},
		{"exclusion by guid", []patches.Policy{excluding(global, patches.Exclusion{DeviceGUID: "g1"})},
			[]patches.Candidate{crit}, []want{{"excluded", "", 0}}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := patches.EvaluateHierarchy(dev, tc.layers, tc.cands, now)
			require.Len(t, e.Decisions, len(tc.want))
			for i, w := range tc.want {
				d := e.Decisions[i]
				require.Equal(t, w, want{d.Status, d.SourceLayer, d.SourcePolicyID}, d.PatchKey)
			}
			if tc.check != nil {
				tc.check(t, e)
			}
		})
	}
}

func with(p patches.Policy, rules ...patches.Rule) patches.Policy {
	p.Rules = rules
	return p
}

func withDeferral(p patches.Policy, days int) patches.Policy {
	p.Defaults.DeferralDays = intp(days)
	return p
}

func excluding(p patches.Policy, e patches.Exclusion) patches.Policy {
	p.Exclusions = []patches.Exclusion{e}
	return p
}

func TestApplicableOrderAndRole(t *testing.T) {
	t.Parallel()
	dev := patches.Device{GUID: "g", SiteID: 7, Role: patches.RoleWorkstation}
	ps := []patches.Policy{
		{ID: 9, Type: patches.TypeDeviceFilter, RoleScope: patches.RoleWorkstation, Enabled: true},
		{ID: 5, Type: patches.TypeSite, SiteID: sitep(7), RoleScope: patches.RoleWorkstation, Enabled: true},
		{ID: 6, Type: patches.TypeSite, SiteID: sitep(8), RoleScope: patches.RoleWorkstation, Enabled: true},
		{ID: 4, Type: patches.TypeSite, SiteID: sitep(7), RoleScope: patches.RoleWorkstation, Enabled: false},
		{ID: 1, Type: patches.TypeGlobal, RoleScope: patches.RoleServer, Enabled: true},
		{ID: 2, Type: patches.TypeGlobal, RoleScope: patches.RoleWorkstation, Enabled: true},
		{ID: 10, Type: patches.TypeDeviceFilter, RoleScope: patches.RoleWorkstation, Enabled: true},
	}
	got := patches.Applicable(dev, ps, func(id int64) bool { return id == 9 })
	var ids []int64
	for _, p := range got {
		ids = append(ids, p.ID)
	}
	require.Equal(t, []int64{2, 5, 9}, ids)
	require.Equal(t, patches.RoleServer, patches.RoleOf("Ubuntu 24.04 LTS"))
	require.Equal(t, patches.RoleServer, patches.RoleOf("Microsoft Windows Server 2022 Standard"))
	require.Equal(t, patches.RoleWorkstation, patches.RoleOf("Microsoft Windows 11 Pro"))
}

func TestWindowOpen(t *testing.T) {
	t.Parallel()
	// 2026-11-03 is the first Tuesday of November; 2026-11-24 the last.
	at := func(day, hour, minute int) time.Time { return time.Date(2026, 11, day, hour, minute, 0, 0, time.UTC) }
	cases := []struct {
		name string
		w    *patches.Window
		at   time.Time
		want bool
	}{
		{"no window is always open", nil, at(3, 12, 0), true},
		{"inside", &patches.Window{TimeZone: "UTC", Ranges: []patches.WindowRange{{Weekday: "tuesday", Start: "02:00", End: "05:00"}}}, at(3, 2, 0), true},
		{"end excluded", &patches.Window{TimeZone: "UTC", Ranges: []patches.WindowRange{{Weekday: "tuesday", Start: "02:00", End: "05:00"}}}, at(3, 5, 0), false},
		{"other day", &patches.Window{TimeZone: "UTC", Ranges: []patches.WindowRange{{Weekday: "tuesday", Start: "02:00", End: "05:00"}}}, at(4, 3, 0), false},
		{"time zone", &patches.Window{TimeZone: "America/New_York", Ranges: []patches.WindowRange{{Weekday: "monday", Start: "22:00", End: "24:00"}}}, at(3, 3, 30), true},
		{"second tuesday", &patches.Window{TimeZone: "UTC", Ranges: []patches.WindowRange{{Weekday: "tuesday", WeekOfMonth: 2, Start: "00:00", End: "24:00"}}}, at(10, 1, 0), true},
		{"not the second tuesday", &patches.Window{TimeZone: "UTC", Ranges: []patches.WindowRange{{Weekday: "tuesday", WeekOfMonth: 2, Start: "00:00", End: "24:00"}}}, at(3, 1, 0), false},
		{"last tuesday", &patches.Window{TimeZone: "UTC", Ranges: []patches.WindowRange{{Weekday: "tuesday", WeekOfMonth: -1, Start: "00:00", End: "24:00"}}}, at(24, 1, 0), true},
		{"not the last tuesday", &patches.Window{TimeZone: "UTC", Ranges: []patches.WindowRange{{Weekday: "tuesday", WeekOfMonth: -1, Start: "00:00", End: "24:00"}}}, at(17, 1, 0), false},
	}
	for _, tc := range cases {
		require.Equal(t, tc.want, tc.w.Open(tc.at), tc.name)
	}
}

func TestConflictsAndParentOverrides(t *testing.T) {
	t.Parallel()
	draft := patches.PolicyInput{Type: patches.TypeSite, RoleScope: patches.RoleServer,
		Rules: []patches.Rule{rule("kb", "equals", "KB1", "approve"), rule("title", "title_contains", "preview", "block")}}
	other := patches.Policy{ID: 4, Type: patches.TypeSite, RoleScope: patches.RoleServer,
		Rules: []patches.Rule{rule("kb", "equals", "kb1", "block"), rule("title", "title_contains", "Preview", "block")}}
	cs := patches.RuleConflicts(draft, other)
	require.Len(t, cs, 1)
	require.Equal(t, "KB1", cs[0].Rule.Value)
	global := patches.Policy{ID: 1, Type: patches.TypeGlobal, RoleScope: patches.RoleServer, Rules: []patches.Rule{rule("kb", "equals", "KB1", "block")}}
	otherRole := patches.Policy{ID: 2, Type: patches.TypeGlobal, RoleScope: patches.RoleWorkstation, Rules: global.Rules}
	require.Len(t, patches.ParentOverrides(draft, []patches.Policy{global, otherRole, other}), 1)
}
