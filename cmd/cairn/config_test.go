package main

import (
	"flag"
	"io"
	"testing"

	"github.com/stretchr/testify/require"
)

func loadTestConfig(t *testing.T, args ...string) (config, error) {
	t.Helper()
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return loadConfig(fs, args)
}

// Not parallel: t.Setenv changes the process environment, which the
// testing package forbids in parallel tests.
func TestGitHubSettingsFromTheEnvironment(t *testing.T) {
	t.Setenv("CAIRN_GITHUB_API_URL", "")
	t.Setenv("CAIRN_GITHUB_TOKEN", "")
	t.Setenv("GITHUB_TOKEN", "")
	c, err := loadTestConfig(t)
	require.NoError(t, err)
	require.Equal(t, "https://api.github.com", c.GitHubAPIURL)
	require.Empty(t, c.GitHubToken)

	t.Setenv("GITHUB_TOKEN", "from-github-token")
	c, err = loadTestConfig(t)
	require.NoError(t, err)
	require.Equal(t, "from-github-token", c.GitHubToken, "GITHUB_TOKEN is the fallback")

	t.Setenv("CAIRN_GITHUB_TOKEN", "from-cairn")
	t.Setenv("CAIRN_GITHUB_API_URL", "http://127.0.0.1:9/api")
	c, err = loadTestConfig(t)
	require.NoError(t, err)
	require.Equal(t, "from-cairn", c.GitHubToken, "CAIRN_GITHUB_TOKEN comes first")
	require.Equal(t, "http://127.0.0.1:9/api", c.GitHubAPIURL)

	_, err = loadTestConfig(t, "-github-api-url", "ftp://example.test")
	require.ErrorContains(t, err, "github-api-url")
}

// A loopback Engine is named localhost by default: browsers refuse IP
// addresses as WebAuthn relying parties, and passkeys should work locally.
func TestDefaultPublicURLNamesLoopbackLocalhost(t *testing.T) {
	t.Parallel()
	require.Equal(t, "http://localhost:8080", defaultPublicURL("127.0.0.1:8080"))
	require.Equal(t, "http://localhost:9000", defaultPublicURL("[::1]:9000"))
	require.Equal(t, "http://0.0.0.0:8080", defaultPublicURL("0.0.0.0:8080"))
	require.Equal(t, "http://cairn.lan:8080", defaultPublicURL("cairn.lan:8080"))
}
