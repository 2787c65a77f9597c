package devicefilters_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn"
)

// Every field and op of the language against the seeded fleet (see
// fleet), with the hostnames each must match (hostname order).
func TestEveryFieldAndOpMatchesExactly(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.fleet(t)
	at := func(d time.Duration) string { return now.Add(-d).Format(time.RFC3339Nano) }
	cases := []struct {
		cond string
		want []string
	}{
		{fmt.Sprintf(`{"field":"site","op":"in","value":[%d]}`, f.sites["alpha"]), []string{"web-1", "web-2"}},
		{fmt.Sprintf(`{"field":"site","op":"not_in","value":[%d, 999999]}`, f.sites["alpha"]), []string{"db-1", "never-1"}},
		{`{"field":"status","op":"is","value":"connected"}`, []string{"web-1"}},
		{`{"field":"status","op":"is","value":"Disconnected"}`, []string{"web-2"}},
		{`{"field":"status","op":"is","value":"OFFLINE"}`, []string{"db-1", "never-1"}},
		{`{"field":"status","op":"is_not","value":"Offline"}`, []string{"web-1", "web-2"}},
		{`{"field":"trust_state","op":"is","value":"quarantined"}`, []string{"db-1"}},
		{`{"field":"trust_state","op":"is_not","value":"active"}`, []string{"db-1", "never-1"}},
		{`{"field":"hostname","op":"equals","value":"WEB-1"}`, []string{"web-1"}},
		{`{"field":"hostname","op":"not_equals","value":"web-1"}`, []string{"db-1", "never-1", "web-2"}},
		{`{"field":"hostname","op":"contains","value":"EB-"}`, []string{"web-1", "web-2"}},
		{`{"field":"hostname","op":"not_contains","value":"web"}`, []string{"db-1", "never-1"}},
		{`{"field":"hostname","op":"starts_with","value":"DB"}`, []string{"db-1"}},
		{`{"field":"hostname","op":"ends_with","value":"-1"}`, []string{"db-1", "never-1", "web-1"}},
		{`{"field":"hostname","op":"is_empty"}`, []string{}},
		{`{"field":"hostname","op":"is_not_empty"}`, []string{"db-1", "never-1", "web-1", "web-2"}},
		{`{"field":"hostname","op":"contains","value":"%"}`, []string{}},
		{`{"field":"description","op":"is_empty"}`, []string{"never-1", "web-2"}},
		{`{"field":"description","op":"is_not_empty"}`, []string{"db-1", "web-1"}},
		{`{"field":"description","op":"contains","value":"database"}`, []string{"db-1"}},
		{`{"field":"description","op":"equals","value":"primary database"}`, []string{"db-1"}},
		{`{"field":"description","op":"not_equals","value":"primary database"}`, []string{"never-1", "web-1", "web-2"}},
		{`{"field":"description","op":"not_contains","value":"server"}`, []string{"db-1", "never-1", "web-2"}},
		{`{"field":"description","op":"starts_with","value":"front"}`, []string{"web-1"}},
		{`{"field":"description","op":"ends_with","value":"BASE"}`, []string{"db-1"}},
		{`{"field":"os","op":"contains","value":"ubuntu"}`, []string{"web-1", "web-2"}},
		{`{"field":"os","op":"equals","value":"windows server 2022"}`, []string{"db-1"}},
		{`{"field":"os","op":"not_equals","value":"windows server 2022"}`, []string{"never-1", "web-1", "web-2"}},
		{`{"field":"os","op":"not_contains","value":"LTS"}`, []string{"db-1", "never-1"}},
		{`{"field":"os","op":"ends_with","value":"2022"}`, []string{"db-1"}},
		{`{"field":"os","op":"is_not_empty"}`, []string{"db-1", "web-1", "web-2"}},
		{`{"field":"os_version","op":"contains","value":"04"}`, []string{"web-1", "web-2"}},
		{`{"field":"os_version","op":"not_contains","value":"04"}`, []string{"db-1", "never-1"}},
		{`{"field":"os_version","op":"starts_with","value":"10."}`, []string{"db-1"}},
		{`{"field":"os_version","op":"ends_with","value":".04"}`, []string{"web-1", "web-2"}},
		{`{"field":"os_version","op":"is_not_empty"}`, []string{"db-1", "web-1", "web-2"}},
		{`{"field":"agent_version","op":"equals","value":"1.3.9"}`, []string{"web-2"}},
		{`{"field":"agent_version","op":"not_equals","value":"1.3.9"}`, []string{"db-1", "never-1", "web-1"}},
		{`{"field":"agent_version","op":"contains","value":".10"}`, []string{"db-1"}},
		{`{"field":"agent_version","op":"not_contains","value":".4."}`, []string{"never-1", "web-2"}},
		{`{"field":"agent_version","op":"ends_with","value":"9"}`, []string{"web-2"}},
		{`{"field":"agent_version","op":"is_not_empty"}`, []string{"db-1", "web-1", "web-2"}},
		{`{"field":"cpu_model","op":"equals","value":"amd epyc"}`, []string{"web-2"}},
		{`{"field":"cpu_model","op":"not_equals","value":"amd epyc"}`, []string{"db-1", "never-1", "web-1"}},
		{`{"field":"cpu_model","op":"not_contains","value":"e"}`, []string{"db-1", "never-1"}},
		{`{"field":"cpu_model","op":"starts_with","value":"intel"}`, []string{"web-1"}},
		{`{"field":"cpu_model","op":"ends_with","value":"YC"}`, []string{"web-2"}},
		{`{"field":"cpu_model","op":"is_not_empty"}`, []string{"web-1", "web-2"}},
		{`{"field":"os","op":"starts_with","value":"windows"}`, []string{"db-1"}},
		{`{"field":"os","op":"is_empty"}`, []string{"never-1"}},
		{`{"field":"os_version","op":"equals","value":"22.04"}`, []string{"web-1"}},
		{`{"field":"os_version","op":"not_equals","value":"22.04"}`, []string{"db-1", "never-1", "web-2"}},
		{`{"field":"os_version","op":"is_empty"}`, []string{"never-1"}},
		{`{"field":"os_version","op":"version_gte","value":"20.04"}`, []string{"web-1", "web-2"}},
		{`{"field":"os_version","op":"version_lt","value":"20.04.1"}`, []string{"db-1", "web-2"}},
		{`{"field":"os_version","op":"version_eq","value":"20.4"}`, []string{"web-2"}},
		{`{"field":"os_version","op":"version_gt","value":"20.4.0"}`, []string{"web-1"}},
		{`{"field":"os_version","op":"version_lte","value":"10.0.20348"}`, []string{"db-1"}},
		{`{"field":"agent_version","op":"version_gt","value":"1.4.2"}`, []string{"db-1"}},
		{`{"field":"agent_version","op":"version_lte","value":"1.4.2"}`, []string{"web-1", "web-2"}},
		{`{"field":"agent_version","op":"version_eq","value":"1.4.2.0"}`, []string{"web-1"}},
		{`{"field":"agent_version","op":"version_lt","value":"1.4"}`, []string{"web-2"}},
		{`{"field":"agent_version","op":"version_gte","value":"v1.4.3"}`, []string{"db-1"}},
		{`{"field":"agent_version","op":"starts_with","value":"1.4"}`, []string{"db-1", "web-1"}},
		{`{"field":"agent_version","op":"is_empty"}`, []string{"never-1"}},
		{`{"field":"cpu_model","op":"contains","value":"xeon"}`, []string{"web-1"}},
		{`{"field":"cpu_model","op":"is_empty"}`, []string{"db-1", "never-1"}},
		{`{"field":"logged_in_user","op":"equals","value":"ALICE"}`, []string{"web-1"}},
		{`{"field":"logged_in_user","op":"not_equals","value":"alice"}`, []string{"db-1", "never-1", "web-2"}},
		{`{"field":"logged_in_user","op":"contains","value":"o"}`, []string{"web-1", "web-2"}},
		{`{"field":"logged_in_user","op":"not_contains","value":"a"}`, []string{"db-1", "never-1"}},
		{`{"field":"logged_in_user","op":"starts_with","value":"car"}`, []string{"web-2"}},
		{`{"field":"logged_in_user","op":"ends_with","value":"OB"}`, []string{"web-1"}},
		{`{"field":"logged_in_user","op":"is_empty"}`, []string{"db-1", "never-1"}},
		{`{"field":"logged_in_user","op":"is_not_empty"}`, []string{"web-1", "web-2"}},
		{`{"field":"last_seen","op":"within_last","value":60}`, []string{"web-1", "web-2"}},
		{`{"field":"last_seen","op":"not_within_last","value":60}`, []string{"db-1", "never-1"}},
		{`{"field":"last_seen","op":"before","value":"` + at(5*time.Minute) + `"}`, []string{"db-1"}},
		{`{"field":"last_seen","op":"after","value":"` + at(20*time.Second) + `"}`, []string{"web-1"}},
		{`{"field":"last_seen","op":"never"}`, []string{"never-1"}},
		{`{"field":"cpu_cores","op":"eq","value":8}`, []string{"web-1"}},
		{`{"field":"cpu_cores","op":"ne","value":8}`, []string{"db-1", "web-2"}},
		{`{"field":"cpu_cores","op":"lt","value":8}`, []string{"web-2"}},
		{`{"field":"cpu_cores","op":"lte","value":8}`, []string{"web-1", "web-2"}},
		{`{"field":"cpu_cores","op":"gt","value":4}`, []string{"db-1", "web-1"}},
		{`{"field":"cpu_cores","op":"gte","value":16}`, []string{"db-1"}},
		{`{"field":"memory_total_bytes","op":"gt","value":10000000000}`, []string{"db-1", "web-1"}},
		{`{"field":"memory_total_bytes","op":"lt","value":1e10}`, []string{"web-2"}},
		{`{"field":"memory_total_bytes","op":"eq","value":8589934592}`, []string{"web-2"}},
		{`{"field":"memory_total_bytes","op":"ne","value":8589934592}`, []string{"db-1", "web-1"}},
		{`{"field":"memory_total_bytes","op":"lte","value":17179869184}`, []string{"web-1", "web-2"}},
		{`{"field":"memory_total_bytes","op":"gte","value":17179869184.0}`, []string{"db-1", "web-1"}},
		{`{"field":"disk_total_bytes","op":"eq","value":0}`, []string{"web-2"}},
		{`{"field":"disk_total_bytes","op":"ne","value":0}`, []string{"db-1", "web-1"}},
		{`{"field":"disk_total_bytes","op":"lt","value":600000000000}`, []string{"web-2"}},
		{`{"field":"disk_total_bytes","op":"lte","value":600000000000}`, []string{"web-1", "web-2"}},
		{`{"field":"disk_total_bytes","op":"gt","value":600000000000}`, []string{"db-1"}},
		{`{"field":"disk_free_bytes","op":"eq","value":250000000000}`, []string{"web-1"}},
		{`{"field":"disk_free_bytes","op":"ne","value":250000000000}`, []string{"db-1", "web-2"}},
		{`{"field":"disk_free_bytes","op":"lte","value":0}`, []string{"web-2"}},
		{`{"field":"disk_free_bytes","op":"gte","value":1e12}`, []string{"db-1"}},
		{`{"field":"disk_total_bytes","op":"gte","value":600000000000}`, []string{"db-1", "web-1"}},
		{`{"field":"disk_free_bytes","op":"lt","value":300000000000}`, []string{"web-1", "web-2"}},
		{`{"field":"disk_free_bytes","op":"gt","value":0.5}`, []string{"db-1", "web-1"}},
		{`{"field":"ip_address","op":"in_cidr","value":"10.0.0.0/8"}`, []string{"web-1", "web-2"}},
		{`{"field":"ip_address","op":"in_cidr","value":"10.0.0.5"}`, []string{"web-1"}},
		{`{"field":"ip_address","op":"in_cidr","value":"10.0.1.9/24"}`, []string{"web-2"}},
		{`{"field":"ip_address","op":"in_cidr","value":"2001:db8::/32"}`, []string{"db-1"}},
		{`{"field":"ip_address","op":"in_cidr","value":"fe80::1"}`, []string{"web-1"}},
		{`{"field":"ip_address","op":"not_in_cidr","value":"10.0.0.0/24"}`, []string{"db-1", "never-1", "web-2"}},
		{`{"field":"software","key":"google chrome","op":"installed"}`, []string{"web-1", "web-2"}},
		{`{"field":"software","key":"Google Chrome","op":"not_installed"}`, []string{"db-1", "never-1"}},
		{`{"field":"software","key":" OpenSSL ","op":"version_gte","value":"3"}`, []string{"web-1"}},
		{`{"field":"software","key":"openssl","op":"version_lt","value":"3.0"}`, []string{"web-2"}},
		{`{"field":"software","key":"openssl","op":"version_eq","value":"3.0.2"}`, []string{"web-1"}},
		// The audit's own spelling of a version (a suffix) is a valid value.
		{`{"field":"software","key":"openssl","op":"version_eq","value":"3.0.2-0ubuntu1.10"}`, []string{"web-1"}},
		{`{"field":"software","key":"google chrome","op":"version_gt","value":"119.0.1"}`, []string{"web-1"}},
		{`{"field":"software","key":"google chrome","op":"version_lte","value":"119.0.1"}`, []string{"web-2"}},
		{`{"field":"software_name","op":"contains","value":"SQL"}`, []string{"db-1"}},
		{`{"field":"software_name","op":"contains","value":"ssl"}`, []string{"web-1", "web-2"}},
		{`{"field":"pending_patches","op":"eq","value":0}`, []string{"never-1", "web-2"}},
		{`{"field":"pending_patches","op":"ne","value":2}`, []string{"db-1", "never-1", "web-2"}},
		{`{"field":"pending_patches","op":"lt","value":3}`, []string{"never-1", "web-1", "web-2"}},
		{`{"field":"pending_patches","op":"lte","value":2}`, []string{"never-1", "web-1", "web-2"}},
		{`{"field":"pending_patches","op":"gt","value":1}`, []string{"db-1", "web-1"}},
		{`{"field":"pending_patches","op":"gte","value":5}`, []string{"db-1"}},
	}
	covered := map[string]bool{}
	for _, c := range cases {
		doc := `{"match":"all","conditions":[` + c.cond + `]}`
		require.Equal(t, c.want, hostnames(t, f, cairn.AllSites, doc), c.cond)
		var n struct{ Field, Op string }
		require.NoError(t, json.Unmarshal([]byte(c.cond), &n))
		covered[n.Field+" "+n.Op] = true
	}
	cat, err := f.svc.Catalog(context.Background(), cairn.AllSites)
	require.NoError(t, err)
	for _, fi := range cat.Fields {
		if fi.Field == "metadata" {
			continue // TestMetadataConditions
		}
		for _, op := range fi.Ops {
			require.True(t, covered[fi.Field+" "+op], "no case for %s %s", fi.Field, op)
		}
	}
}

// Groups combine with all/any at any depth.
func TestGroupsCombine(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.fleet(t)
	for doc, want := range map[string][]string{
		`{"match":"any","conditions":[{"field":"hostname","op":"starts_with","value":"db"},{"field":"status","op":"is","value":"Connected"}]}`: {"db-1", "web-1"},
		`{"match":"all","conditions":[{"field":"os","op":"contains","value":"ubuntu"},{"match":"any","conditions":[
			{"field":"software","key":"openssl","op":"version_lt","value":"2"},{"field":"pending_patches","op":"gt","value":1}]}]}`: {"web-1", "web-2"},
		`{"match":"all","conditions":[{"field":"os","op":"contains","value":"ubuntu"},{"match":"all","conditions":[
			{"field":"software","key":"openssl","op":"version_lt","value":"2"},{"field":"pending_patches","op":"gt","value":1}]}]}`: {},
		`{"match":"any","conditions":[{"match":"any","conditions":[{"match":"any","conditions":[{"match":"all","conditions":[
			{"field":"last_seen","op":"never"}]}]}]}]}`: {"never-1"},
		// A logged-in user reads devices.metrics, so this total counts over
		// devices, not device_filter_rows, with the string fragments of
		// devices.
		`{"match":"all","conditions":[{"field":"hostname","op":"starts_with","value":"WEB"},
			{"field":"logged_in_user","op":"equals","value":"Carol"}]}`: {"web-2"},
	} {
		require.Equal(t, want, hostnames(t, f, cairn.AllSites, doc), doc)
	}
}
