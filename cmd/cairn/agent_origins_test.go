package main

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// Every origin `cairn serve` answers agents on is one an agent may sign
// its DPoP proofs for: each listener under its loopback names, and the
// HTTPS listener under every name its certificate covers.
func TestServedAgentURLs(t *testing.T) {
	for _, k := range []string{"CAIRN_HTTP_ADDR", "CAIRN_HTTPS_ADDR", "CAIRN_PUBLIC_URL", "CAIRN_TLS_HOSTNAMES", "CAIRN_ALLOW_PLAIN_HTTP"} {
		t.Setenv(k, "")
	}
	c, err := loadTestConfig(t)
	require.NoError(t, err)
	require.Equal(t, []string{
		"http://localhost:8080", "http://127.0.0.1:8080",
		"https://localhost:8443", "https://127.0.0.1:8443",
	}, c.servedAgentURLs(nil))
	// The local CA's certificate: loopback names plus the configured ones.
	require.Equal(t, []string{
		"http://localhost:8080", "http://127.0.0.1:8080",
		"https://localhost:8443", "https://127.0.0.1:8443", "https://rmm.lan:8443", "https://[::1]:8443",
	}, c.servedAgentURLs([]string{"localhost", "rmm.lan", "*.lan", "127.0.0.1", "::1"}))

	c, err = loadTestConfig(t, "-http-addr", "[::1]:9000", "-https-addr", "off")
	require.NoError(t, err)
	require.Equal(t, []string{"http://localhost:9000", "http://[::1]:9000"}, c.servedAgentURLs(nil))

	c, err = loadTestConfig(t, "-http-addr", "0.0.0.0:8080", "-allow-plain-http", "-https-addr", "10.0.0.5:443",
		"-public-url", "https://rmm.example.test")
	require.NoError(t, err)
	require.Equal(t, []string{
		"http://localhost:8080", "http://127.0.0.1:8080", "http://[::1]:8080",
		"https://10.0.0.5:443", "https://rmm.example.test:443",
	}, c.servedAgentURLs(nil))
}
