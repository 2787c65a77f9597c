package main

import (
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/internal/agentartifacts"
)

// The install journey end to end: the real Engine serves an agent built
// with a build ID (as make builds bin/agents); an installer downloads it
// anonymously through the site's signed link, the downloaded binary says
// it is that build, enrolls and installs itself with the one-liner's
// `install --server --code` (into a scratch unit directory, not started),
// then runs and reports the build to the Engine.
func TestInstallThroughSignedLinkEndToEnd(t *testing.T) {
	t.Parallel()
	tmp, err := os.MkdirTemp("", "cairn-install-e2e-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(tmp) })
	require.NoError(t, os.Chmod(tmp, 0o755))

	const buildID = "e2e-install-build-1"
	artifacts := filepath.Join(tmp, "agents")
	bin := filepath.Join(artifacts, "linux-amd64", "cairn-agent")
	build := exec.Command("go", "build", "-trimpath", "-ldflags", "-X github.com/cairn-rmm/cairn/agent/version.BuildID="+buildID,
		"-o", bin, "github.com/cairn-rmm/cairn/cmd/cairn-agent")
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.NoError(t, os.WriteFile(bin+agentartifacts.BuildIDSuffix, []byte(buildID+"\n"), 0o644))

	eng := startServe(t, filepath.Join(tmp, "data"), "CAIRN_AGENT_ARTIFACTS="+artifacts)
	token := eng.signIn(t)
	site := eng.post(t, "/api/sites", token, map[string]any{"name": "Install E2E", "site_worker_slug": "install-e2e"})
	code := eng.post(t, "/api/admin/enrollment-codes", token, map[string]any{"site_id": site["site_id"]})["code"].(string)

	var link, server string
	for _, s := range eng.call(t, "GET", "/api/sites", token, nil)["sites"].([]any) {
		if m := s.(map[string]any); m["site_id"] == site["site_id"] {
			server = m["public_base_url"].(string)
			l := m["install_links"].(map[string]any)["linux-amd64"].(map[string]any)
			require.Equal(t, buildID, l["build_id"])
			require.Contains(t, l["install_command"], "install --server "+server+" --code")
			link = l["url"].(string)
		}
	}
	require.NotEmpty(t, link)
	require.NotContains(t, eng.call(t, "GET", "/api/sites", token, nil), "windows-amd64", "no Windows build here")

	// The installer's download: no session, no device identity.
	res, err := http.Get(link)
	require.NoError(t, err)
	downloaded := filepath.Join(tmp, "downloaded-cairn-agent")
	f, err := os.OpenFile(downloaded, os.O_CREATE|os.O_WRONLY, 0o755)
	require.NoError(t, err)
	_, err = io.Copy(f, res.Body)
	res.Body.Close()
	require.NoError(t, f.Close())
	require.Equal(t, 200, res.StatusCode)

	ver, err := exec.Command(downloaded, "version").CombinedOutput()
	require.NoError(t, err, "%s", ver)
	require.Contains(t, string(ver), "build_id: "+buildID+"\n")
	require.Contains(t, string(ver), "platform: linux-amd64\n")
	require.Equal(t, must(os.ReadFile(bin)), must(os.ReadFile(downloaded)), "the download is the artifact")

	// The one-liner's last step, kept off the host's systemd.
	units := filepath.Join(tmp, "units")
	require.NoError(t, os.MkdirAll(units, 0o755))
	a := startAgent(t, downloaded, tmp, "install-e2e-host", "install", "--server", server, "--code", code,
		"--unit-dir", units, "--no-start", "--binary", downloaded)
	id := eng.waitApproval(t, token, a.hostname)
	eng.post(t, "/api/admin/device-approvals/"+id+"/approve", token, nil)
	a.waitExit(t, 90*time.Second)
	unit := string(must(os.ReadFile(filepath.Join(units, "cairn-agent.service"))))
	require.Contains(t, unit, "ExecStart="+downloaded+" run --config "+filepath.Join(a.dir, "agent.json"))
	a.cfg = loadAgentConfig(t, a.dir)

	// Running, it records and reports its build.
	a.run(t, downloaded)
	require.Eventually(t, func() bool {
		d := eng.call(t, "GET", "/api/devices/"+a.cfg.Agent.GUID, token, nil)
		return d["agent_build_id"] == buildID
	}, 90*time.Second, 500*time.Millisecond, "agent output:\n%s", a.output())
	require.Equal(t, buildID, loadAgentConfigFresh(t, a.dir).Agent.InstalledBuildID)

	// The one download counted on the site's link.
	for _, s := range eng.call(t, "GET", "/api/sites", token, nil)["sites"].([]any) {
		if m := s.(map[string]any); m["site_id"] == site["site_id"] {
			require.EqualValues(t, 1, m["install_links"].(map[string]any)["linux-amd64"].(map[string]any)["download_count"])
		}
	}
}
