package tlsca_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/internal/tlsca"
)

func parsePEM(t *testing.T, data []byte) *x509.Certificate {
	t.Helper()
	block, _ := pem.Decode(data)
	require.NotNil(t, block)
	cert, err := x509.ParseCertificate(block.Bytes)
	require.NoError(t, err)
	return cert
}

func TestFirstStartCreatesCAAndCertificate(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "data", "tls")
	m, err := tlsca.Load(tlsca.Options{Dir: dir, Hostnames: []string{"cairn.example.test", "10.0.0.5", "0.0.0.0"}})
	require.NoError(t, err)
	require.Equal(t, tlsca.ModeLocalCA, m.Mode())

	ca := parsePEM(t, m.CAPEM())
	require.True(t, ca.IsCA)
	require.Regexp(t, `^Cairn local CA [0-9a-f]{8}$`, ca.Subject.CommonName)
	require.IsType(t, &ecdsa.PublicKey{}, ca.PublicKey)
	require.Equal(t, elliptic.P256(), ca.PublicKey.(*ecdsa.PublicKey).Curve)
	require.WithinDuration(t, time.Now().Add(10*365*24*time.Hour), ca.NotAfter, 2*time.Hour)

	info := m.Info()
	require.Equal(t, tlsca.ModeLocalCA, info.Mode)
	require.ElementsMatch(t, []string{"localhost", "cairn.example.test"}, info.DNSNames)
	require.ElementsMatch(t, []string{"127.0.0.1", "::1", "10.0.0.5"}, info.IPAddresses, "unspecified addresses are left out")
	require.Equal(t, "CN=cairn.example.test,O=Cairn", info.Subject)
	require.WithinDuration(t, time.Now().Add(365*24*time.Hour), info.NotAfter, 2*time.Hour)
	require.Regexp(t, `^([0-9A-F]{2}:){31}[0-9A-F]{2}$`, info.Fingerprint)
	require.Equal(t, tlsca.Fingerprint(ca.Raw), info.CAFingerprint)

	leaf, err := m.GetCertificate(nil)
	require.NoError(t, err)
	require.NoError(t, leaf.Leaf.CheckSignatureFrom(ca))
	require.Equal(t, tlsca.Fingerprint(leaf.Certificate[0]), info.Fingerprint)

	for name, mode := range map[string]os.FileMode{"ca-key.pem": 0o600, "server-key.pem": 0o600, "ca.pem": 0o644, "server.pem": 0o644} {
		st, err := os.Stat(filepath.Join(dir, name))
		require.NoError(t, err)
		require.Equal(t, mode, st.Mode().Perm(), name)
	}
	st, err := os.Stat(dir)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o700), st.Mode().Perm())
	st, err = os.Stat(filepath.Dir(dir))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o755), st.Mode().Perm()&0o755, "the data directory stays traversable")
}

func TestLaterStartsReuseTheCAAndCertificate(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	first, err := tlsca.Load(tlsca.Options{Dir: dir, Hostnames: []string{"cairn.example.test"}})
	require.NoError(t, err)
	second, err := tlsca.Load(tlsca.Options{Dir: dir, Hostnames: []string{"cairn.example.test"}})
	require.NoError(t, err)
	require.Equal(t, first.Info(), second.Info())
	require.Equal(t, first.CAPEM(), second.CAPEM())
}

// A certificate due for renewal, or one missing a configured name, is
// replaced by one from the same CA: agents keep trusting the Engine.
func TestCertificateIsRenewedByTheSameCA(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		later     time.Duration
		hostnames []string
		renewed   bool
	}{
		"nothing changed":        {later: 300 * 24 * time.Hour, hostnames: []string{"cairn.example.test"}},
		"expires within 30 days": {later: 336 * 24 * time.Hour, hostnames: []string{"cairn.example.test"}, renewed: true},
		"expired":                {later: 400 * 24 * time.Hour, hostnames: []string{"cairn.example.test"}, renewed: true},
		"a name was added":       {hostnames: []string{"cairn.example.test", "rmm.example.test"}, renewed: true},
		"the public host moved":  {hostnames: []string{"other.example.test"}, renewed: true},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			start := time.Now()
			first, err := tlsca.Load(tlsca.Options{Dir: dir, Hostnames: []string{"cairn.example.test"}, Now: func() time.Time { return start }})
			require.NoError(t, err)
			now := start.Add(tc.later)
			second, err := tlsca.Load(tlsca.Options{Dir: dir, Hostnames: tc.hostnames, Now: func() time.Time { return now }})
			require.NoError(t, err)
			require.Equal(t, first.CAPEM(), second.CAPEM(), "the CA is kept")
			if !tc.renewed {
				require.Equal(t, first.Info(), second.Info())
				return
			}
			require.NotEqual(t, first.Info().Fingerprint, second.Info().Fingerprint)
			require.WithinDuration(t, now.Add(365*24*time.Hour), second.Info().NotAfter, 2*time.Hour)
			leaf, err := second.GetCertificate(nil)
			require.NoError(t, err)
			require.NoError(t, leaf.Leaf.CheckSignatureFrom(parsePEM(t, first.CAPEM())))
			for _, h := range tc.hostnames {
				require.NoError(t, leaf.Leaf.VerifyHostname(h))
			}
			// The renewed certificate is what the next start finds.
			third, err := tlsca.Load(tlsca.Options{Dir: dir, Hostnames: tc.hostnames, Now: func() time.Time { return now }})
			require.NoError(t, err)
			require.Equal(t, second.Info(), third.Info())
		})
	}
}

// Refresh renews in place: the TLS config serves the new certificate
// without a restart.
func TestRefreshSwapsTheServedCertificate(t *testing.T) {
	t.Parallel()
	now := time.Now()
	m, err := tlsca.Load(tlsca.Options{Dir: t.TempDir(), Now: func() time.Time { return now }})
	require.NoError(t, err)
	before, _ := m.TLSConfig().GetCertificate(nil)
	now = now.Add(340 * 24 * time.Hour)
	require.NoError(t, m.Refresh())
	after, _ := m.TLSConfig().GetCertificate(nil)
	require.NotEqual(t, before.Leaf.Raw, after.Leaf.Raw)
	require.Equal(t, tlsca.Fingerprint(after.Leaf.Raw), m.Info().Fingerprint)
}

// writeSelfSigned writes a certificate for name and its key; it returns the
// file names.
func writeSelfSigned(t *testing.T, dir, prefix, name string) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(7), Subject: pkix.Name{CommonName: name}, DNSNames: []string{name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(90 * 24 * time.Hour),
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	require.NoError(t, err)
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	require.NoError(t, err)
	certFile, keyFile = filepath.Join(dir, prefix+"cert.pem"), filepath.Join(dir, prefix+"key.pem")
	require.NoError(t, os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644))
	require.NoError(t, os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600))
	return certFile, keyFile
}

func TestProvidedCertificateIsUsedAsIs(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	certFile, keyFile := writeSelfSigned(t, tmp, "", "rmm.example.test")
	dir := filepath.Join(tmp, "tls")
	m, err := tlsca.Load(tlsca.Options{Dir: dir, Hostnames: []string{"cairn.example.test"}, CertFile: certFile, KeyFile: keyFile})
	require.NoError(t, err)
	require.Equal(t, tlsca.ModeProvided, m.Mode())
	require.Nil(t, m.CAPEM(), "no CA to pin")
	info := m.Info()
	require.Equal(t, tlsca.ModeProvided, info.Mode)
	require.Equal(t, []string{"rmm.example.test"}, info.DNSNames, "the certificate is not reissued")
	require.Empty(t, info.CAFingerprint)
	pemData, err := os.ReadFile(certFile)
	require.NoError(t, err)
	require.Equal(t, tlsca.Fingerprint(parsePEM(t, pemData).Raw), info.Fingerprint)
	_, err = os.Stat(dir)
	require.ErrorIs(t, err, os.ErrNotExist, "no local CA is created")
}

func TestMismatchedProvidedPairIsRefused(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	certFile, _ := writeSelfSigned(t, tmp, "a-", "rmm.example.test")
	_, otherKey := writeSelfSigned(t, tmp, "b-", "rmm.example.test")
	_, err := tlsca.Load(tlsca.Options{Dir: tmp, CertFile: certFile, KeyFile: otherKey})
	require.ErrorContains(t, err, "must be a matching PEM pair")
	require.ErrorContains(t, err, "private key does not match public key")

	_, err = tlsca.Load(tlsca.Options{Dir: tmp, CertFile: certFile})
	require.ErrorContains(t, err, "set both CAIRN_TLS_CERT_FILE and CAIRN_TLS_KEY_FILE")
	_, err = tlsca.Load(tlsca.Options{Dir: tmp, CertFile: filepath.Join(tmp, "missing.pem"), KeyFile: otherKey})
	require.ErrorContains(t, err, "missing.pem")
}

// What an agent does: trust only the pinned CA and check the host name.
func TestClientPinningTheCAVerifiesTheEngine(t *testing.T) {
	t.Parallel()
	m, err := tlsca.Load(tlsca.Options{Dir: t.TempDir(), Hostnames: []string{"cairn.example.test"}})
	require.NoError(t, err)
	ln, err := tls.Listen("tcp", "127.0.0.1:0", m.TLSConfig())
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				_ = c.(*tls.Conn).Handshake()
				c.Close()
			}()
		}
	}()
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(m.CAPEM()))
	dial := func(serverName string, roots *x509.CertPool) error {
		c, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", ln.Addr().String(),
			&tls.Config{RootCAs: roots, ServerName: serverName})
		if err == nil {
			c.Close()
		}
		return err
	}
	require.NoError(t, dial("localhost", pool))
	require.NoError(t, dial("cairn.example.test", pool))
	require.NoError(t, dial("127.0.0.1", pool))
	var hostErr x509.HostnameError
	require.ErrorAs(t, dial("elsewhere.example.test", pool), &hostErr)
	var unknown x509.UnknownAuthorityError
	require.ErrorAs(t, dial("localhost", x509.NewCertPool()), &unknown, "only the pinned CA is trusted")
}
