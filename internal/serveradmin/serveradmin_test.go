package serveradmin

import (
	"testing"
	"testing/fstest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn"
)

func TestTimezonesFromTheSystemTables(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC)
	fsys := fstest.MapFS{
		"zi/tzdata.zi":     {Data: []byte("# version\nZ Europe/Paris 0:9:21 - LMT 1891\nL Europe/Paris Europe/Monaco\nR x\n")},
		"tab/zone1970.tab": {Data: []byte("# comment\nFR\t+4852+00220\tEurope/Paris\nJP\t+353916+1394441\tAsia/Tokyo\n")},
	}
	zones := Timezones(fsys, []string{"/missing.zi", "/zi/tzdata.zi"}, now, time.UTC)
	var names []string
	for _, z := range zones {
		names = append(names, z.Name)
		if z.Name == "Europe/Paris" {
			require.Equal(t, 7200, z.UTCOffsetSeconds, "summer time")
			require.Equal(t, "CEST", z.Abbreviation)
		}
	}
	require.Equal(t, []string{"Europe/Monaco", "Europe/Paris", "UTC"}, names)

	zones = Timezones(fsys, []string{"/tab/zone1970.tab"}, now, time.UTC)
	require.Len(t, zones, 3)
	require.Equal(t, "Asia/Tokyo", zones[0].Name)
	require.Equal(t, 9*3600, zones[0].UTCOffsetSeconds)

	// Nothing readable: UTC and the server's own zone.
	tokyo, err := time.LoadLocation("Asia/Tokyo")
	require.NoError(t, err)
	zones = Timezones(fstest.MapFS{}, ZoneTables, now, tokyo)
	require.Equal(t, []Zone{{Name: "Asia/Tokyo", Abbreviation: "JST", UTCOffsetSeconds: 32400}, {Name: "UTC", Abbreviation: "UTC"}}, zones)
}

func TestClockAndCertificateSeverity(t *testing.T) {
	t.Parallel()
	tokyo, err := time.LoadLocation("Asia/Tokyo")
	require.NoError(t, err)
	now := time.Date(2026, 11, 29, 3, 0, 0, 0, time.UTC)
	c := ClockAt(now, tokyo)
	require.Equal(t, "Asia/Tokyo", c.Timezone)
	require.Equal(t, 32400, c.UTCOffsetSeconds)
	require.Equal(t, now.UnixMilli(), c.UnixMS)
	require.True(t, c.Now.Equal(now))

	for _, tc := range []struct {
		left time.Duration
		want string
	}{{-time.Hour, SeverityCritical}, {6 * 24 * time.Hour, SeverityCritical}, {20 * 24 * time.Hour, SeverityWarning}, {90 * 24 * time.Hour, SeverityOK}} {
		require.Equal(t, tc.want, CertificateSeverity(now, now.Add(tc.left)), tc.left)
	}
	require.NotEmpty(t, BuildInfo().GoVersion)
}

func TestParseServiceAction(t *testing.T) {
	t.Parallel()
	sites := func(slug string) bool { return slug == "hq" }
	cases := []struct {
		key, action string
		want        ServiceAction
		field       string
	}{
		{"worker:site:hq", "restart", ServiceAction{Service: "worker:site:hq", Action: "restart", SiteSlug: "hq"}, ""},
		{"edge", "reload_certificate", ServiceAction{Service: "edge", Action: "reload_certificate"}, ""},
		{"tunnels", "reconcile_tunnels", ServiceAction{Service: "tunnels", Action: "reconcile_tunnels"}, ""},
		{"worker:site:gone", "restart", ServiceAction{}, "service_key"},
		{"worker:site:", "restart", ServiceAction{}, "service_key"},
		{"postgresql", "restart", ServiceAction{}, "service_key"},
		{"engine", "restart", ServiceAction{}, "service_key"},
		{"edge", "restart", ServiceAction{}, "action"},
		{"worker:site:hq", "reload_certificate", ServiceAction{}, "action"},
		{"tunnels", "", ServiceAction{}, "action"},
	}
	for _, c := range cases {
		got, err := ParseServiceAction(c.key, c.action, sites)
		if c.field == "" {
			require.NoError(t, err, c.key)
			require.Equal(t, c.want, got)
			continue
		}
		var e *cairn.Error
		require.ErrorAs(t, err, &e, c.key)
		require.Equal(t, cairn.ECodeValidation, e.Code, c.key)
		require.Contains(t, e.Fields, c.field, c.key)
	}
}

func TestSupervisor(t *testing.T) {
	t.Parallel()
	env := func(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }
	require.Equal(t, "systemd", Supervisor(env(map[string]string{"INVOCATION_ID": "abc"})))
	require.Equal(t, "systemd", Supervisor(env(map[string]string{"NOTIFY_SOCKET": "/run/systemd/notify"})))
	require.Equal(t, "", Supervisor(env(nil)))
}
