package transport

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestLoadCAFile(t *testing.T) {
	t.Parallel()
	env := setup(t)
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
		return p
	}
	leaf := string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: env.cert.Certificate[0]}))
	bundle := "# Engine CA\n" + env.caPEM + otherCAPEM(t)

	got, err := LoadCAFile(write("ca.pem", env.caPEM))
	require.NoError(t, err)
	require.Equal(t, env.caPEM, got)
	got, err = LoadCAFile(write("bundle.pem", bundle))
	require.NoError(t, err)
	require.Equal(t, bundle, got, "the file is stored as it is")
	cas, err := ParseCAPEM(bundle)
	require.NoError(t, err)
	require.Len(t, cas, 2)

	for _, tc := range []struct {
		path string
		want string
	}{
		{write("leaf.pem", leaf), "is not a CA certificate"},
		{write("empty.pem", "nothing here\n"), "no PEM CERTIFICATE block"},
		{write("key-only.pem", "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"), "no PEM CERTIFICATE block"},
		{write("garbage.pem", "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"), "CA certificate 1:"},
		{filepath.Join(dir, "missing.pem"), "no such file"},
		{dir, "not a regular file"},
	} {
		_, err := LoadCAFile(tc.path)
		require.ErrorContains(t, err, tc.want, tc.path)
	}
}

// A pinned Engine CA is the only one trusted (issue 13 item 15): a server
// whose certificate chains to a CA the system roots hold (here injected
// roots standing in for a public CA) is refused, unless the agent was
// told to trust public CAs as well.
func TestPinnedCAExcludesSystemRoots(t *testing.T) {
	t.Parallel()
	engine, public := setup(t), setup(t)
	publicRoots := func() (*x509.CertPool, error) {
		pool := x509.NewCertPool()
		require.True(t, pool.AppendCertsFromPEM([]byte(public.caPEM)))
		return pool, nil
	}
	enginePort := engine.serve(t, "127.0.0.1:0", http.HandlerFunc(okJSON), false, 0)
	publicPort := public.serve(t, "127.0.0.1:0", http.HandlerFunc(okJSON), false, 0)
	get := func(port, caPEM string, trustPublic bool) error {
		c, err := New(Config{ServerURL: "https://" + engineName + ":" + port, ServerIPFallback: "127.0.0.1",
			CAPEM: caPEM, TrustPublicCAs: trustPublic, SystemRoots: publicRoots})
		require.NoError(t, err)
		t.Cleanup(c.CloseIdleConnections)
		var out struct{ OK bool }
		if err := c.Do(context.Background(), http.MethodGet, "/api/health", nil, &out, AuthNone); err != nil {
			return err
		}
		require.True(t, out.OK)
		return nil
	}

	require.NoError(t, get(publicPort, "", false), "without a pin the system roots vouch for the server")
	require.NoError(t, get(enginePort, engine.caPEM, false), "the pinned CA vouches for the Engine")
	err := get(publicPort, engine.caPEM, false)
	var unknown x509.UnknownAuthorityError
	require.ErrorAs(t, err, &unknown, "a system root must not vouch for a pinned Engine: %v", err)
	require.NoError(t, get(publicPort, engine.caPEM, true), "trust_public_cas adds the system roots")
	require.NoError(t, get(enginePort, engine.caPEM, true))
	require.Error(t, get(enginePort, "", false), "the Engine's CA is not a system root")
}
