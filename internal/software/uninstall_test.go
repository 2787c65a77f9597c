package software_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/agent/proto"
	"github.com/cairn-rmm/cairn/db"
	"github.com/cairn-rmm/cairn/internal/software"
)

// The uninstall's script follows the device's platform and the rules:
// an override's command (through cmd on Windows, sh elsewhere), else the
// platform's own script, which takes the name as a parameter only.
func TestPlanUninstall(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := context.Background()
	admin := software.Actor{Username: "admin", Admin: true, Scope: cairn.AllSites}
	for guid, os := range map[string]string{"win-1": "Microsoft Windows 11 Pro", "deb-1": "Debian GNU/Linux 13 (trixie)"} {
		f.device(t, guid, "a")
		require.NoError(t, f.store.DeviceOperatingSystemSet(ctx, db.DeviceOperatingSystemSetParams{Guid: cairn.DeviceGUID(guid), OperatingSystem: os}))
		f.ingest(t, guid, pkg("Tool; rm -rf /", "1.0", "Acme"), pkg("Other", "2.0", "Acme"))
	}
	v := "1.0"
	_, err := f.svc.SetUninstallOverride(ctx, admin, software.Target{Hostname: "win-1", Name: "Other"},
		software.UninstallOverride{Executable: `C:\Program Files\Other\uninstall.exe`, Arguments: "/S"})
	require.NoError(t, err)

	for _, tc := range []struct {
		host, name   string
		version      *string
		lang, inBody string
		override     bool
	}{
		{"win-1", "Tool; rm -rf /", &v, proto.LangPowerShell, "msiexec.exe", false},
		{"deb-1", "Tool; rm -rf /", nil, proto.LangSh, "apt-get remove", false},
		{"win-1", "Other", nil, proto.LangCmd, `"C:\Program Files\Other\uninstall.exe" /S`, true},
		{"deb-1", "other", nil, proto.LangSh, `"C:\Program Files\Other\uninstall.exe" /S`, true},
	} {
		job, err := f.svc.PlanUninstall(ctx, admin, software.Target{Hostname: tc.host, Name: tc.name, Version: tc.version})
		require.NoError(t, err, tc.host+" "+tc.name)
		require.Equal(t, tc.lang, job.Language, tc.host+" "+tc.name)
		require.Contains(t, job.Body, tc.inBody)
		require.Equal(t, tc.override, job.Command != "")
		require.Equal(t, software.UninstallTimeoutSeconds, job.TimeoutSeconds)
		if !tc.override {
			require.NotContains(t, job.Body, "rm -rf", "the name is a parameter, never part of the script")
			require.Equal(t, map[string]any{"name": "Tool; rm -rf /", "version": map[bool]string{true: "1.0", false: ""}[tc.version != nil]}, job.Parameters)
		}
	}

	_, err = f.svc.Block(ctx, admin, software.Target{Hostname: "deb-1", Name: "Other"}, "keep it")
	require.NoError(t, err)
	_, err = f.svc.PlanUninstall(ctx, admin, software.Target{Hostname: "deb-1", Name: "Other"})
	require.Equal(t, software.ECodeUninstallBlocked, cairn.ErrorCode(err))
	_, err = f.svc.PlanUninstall(ctx, software.Actor{Username: "x", Scope: cairn.SiteScope{SiteIDs: []int64{f.sites["b"]}}},
		software.Target{Hostname: "deb-1", Name: "Tool; rm -rf /"})
	require.Equal(t, cairn.ECodeNotFound, cairn.ErrorCode(err), "another site's device is not found")
}
