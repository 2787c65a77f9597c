// Package tlsca gives the Engine its HTTPS certificate: either a certificate
// the operator provides, or one issued by a local CA that the Engine creates
// on first start under its data directory. Agents pin the local CA (SPEC
// "Authentication" rule 6), so the CA is kept across restarts and only the
// server certificate is renewed.
package tlsca

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// Mode says where the server certificate comes from.
type Mode string

const (
	// ModeLocalCA: issued by the Engine's own CA (agents pin that CA).
	ModeLocalCA Mode = "local_ca"
	// ModeProvided: CAIRN_TLS_CERT_FILE and CAIRN_TLS_KEY_FILE.
	ModeProvided Mode = "provided"
)

// Lifetimes and the renewal window of the local CA's certificates.
const (
	CALifetime     = 10 * 365 * 24 * time.Hour
	ServerLifetime = 365 * 24 * time.Hour
	RenewBefore    = 30 * 24 * time.Hour
)

// Names every local-CA server certificate covers, besides Options.Hostnames.
var loopbackNames = []string{"localhost", "127.0.0.1", "::1"}

// File names under Options.Dir.
const (
	caCertFile     = "ca.pem"
	caKeyFile      = "ca-key.pem"
	serverCertFile = "server.pem"
	serverKeyFile  = "server-key.pem"
)

// Options configure a Manager.
type Options struct {
	// Dir holds the local CA and its server certificate (created 0700).
	Dir string
	// Hostnames the server certificate must cover (DNS names or IPs), e.g.
	// the host of CAIRN_PUBLIC_URL and CAIRN_TLS_HOSTNAMES. localhost,
	// 127.0.0.1 and ::1 are always added.
	Hostnames []string
	// CertFile and KeyFile name a provided certificate and key (PEM); set
	// both to use them instead of the local CA.
	CertFile, KeyFile string
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// Info describes the server certificate in use.
type Info struct {
	Mode        Mode      `json:"mode"`
	Subject     string    `json:"subject"`
	DNSNames    []string  `json:"dns_names"`
	IPAddresses []string  `json:"ip_addresses"`
	NotAfter    time.Time `json:"not_after"`
	// Fingerprint is the SHA-256 of the certificate (DER), as
	// `openssl x509 -fingerprint -sha256` prints it.
	Fingerprint string `json:"fingerprint"`
	// CAFingerprint is the same for the local CA (empty when provided).
	CAFingerprint string `json:"ca_fingerprint,omitempty"`
}

// Manager holds the current server certificate.
type Manager struct {
	opts Options

	mu    sync.RWMutex
	cert  *tls.Certificate
	info  Info
	caPEM []byte
}

// Load prepares the server certificate: the provided pair (checked to
// match), or the local CA's certificate, creating the CA on first use and
// renewing the certificate when it nears expiry or misses a name.
func Load(opts Options) (*Manager, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if (opts.CertFile == "") != (opts.KeyFile == "") {
		return nil, errors.New("set both CAIRN_TLS_CERT_FILE and CAIRN_TLS_KEY_FILE, or neither")
	}
	m := &Manager{opts: opts}
	if err := m.Refresh(); err != nil {
		return nil, err
	}
	return m, nil
}

// Refresh reloads a provided pair, or renews the local CA's certificate if
// it is due; the TLS config picks the result up for new connections.
func (m *Manager) Refresh() error {
	if m.opts.CertFile != "" {
		return m.loadProvided()
	}
	return m.loadLocal()
}

// Mode reports where the certificate comes from.
func (m *Manager) Mode() Mode {
	if m.opts.CertFile != "" {
		return ModeProvided
	}
	return ModeLocalCA
}

// CAPEM is the local CA certificate (what agents and installers pin); nil
// for a provided certificate.
func (m *Manager) CAPEM() []byte {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.caPEM
}

// Info describes the certificate in use.
func (m *Manager) Info() Info {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.info
}

// GetCertificate is for tls.Config: the current certificate.
func (m *Manager) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.cert, nil
}

// TLSConfig serves the current certificate, TLS 1.2 and up.
func (m *Manager) TLSConfig() *tls.Config {
	return &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: m.GetCertificate}
}

func (m *Manager) loadProvided() error {
	pair, err := tls.LoadX509KeyPair(m.opts.CertFile, m.opts.KeyFile)
	if err != nil {
		return fmt.Errorf("TLS certificate %s with key %s: %w (CAIRN_TLS_CERT_FILE and CAIRN_TLS_KEY_FILE must be a matching PEM pair)",
			m.opts.CertFile, m.opts.KeyFile, err)
	}
	leaf := pair.Leaf
	if leaf == nil {
		if leaf, err = x509.ParseCertificate(pair.Certificate[0]); err != nil {
			return fmt.Errorf("parse %s: %w", m.opts.CertFile, err)
		}
		pair.Leaf = leaf
	}
	m.set(&pair, describe(ModeProvided, leaf, nil), nil)
	return nil
}

func (m *Manager) loadLocal() error {
	// Only the TLS directory is private: the data directory above it must
	// stay traversable (the private PostgreSQL cluster runs as another user
	// when the Engine runs as root).
	if err := os.MkdirAll(filepath.Dir(m.opts.Dir), 0o755); err != nil {
		return fmt.Errorf("TLS directory: %w", err)
	}
	if err := os.Mkdir(m.opts.Dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("TLS directory: %w", err)
	}
	ca, caKey, caPEM, err := m.loadOrCreateCA()
	if err != nil {
		return err
	}
	names := m.names()
	pair, leaf, err := m.loadServer(ca)
	if err != nil || !m.current(leaf, names) {
		if pair, leaf, err = m.issueServer(ca, caKey, names); err != nil {
			return err
		}
	}
	m.set(pair, describe(ModeLocalCA, leaf, ca), caPEM)
	return nil
}

func (m *Manager) set(pair *tls.Certificate, info Info, caPEM []byte) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.cert, m.info, m.caPEM = pair, info, caPEM
}

// names are the loopback names plus the configured ones, deduplicated,
// with unspecified addresses (0.0.0.0, ::) left out.
func (m *Manager) names() []string {
	var out []string
	seen := map[string]bool{}
	for _, n := range append(slices.Clone(loopbackNames), m.opts.Hostnames...) {
		n = strings.ToLower(strings.TrimSuffix(strings.TrimSpace(strings.Trim(n, "[]")), "."))
		if ip := net.ParseIP(n); ip != nil {
			if ip.IsUnspecified() {
				continue
			}
			n = ip.String()
		}
		if n != "" && !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	return out
}

// current reports whether leaf covers every name and is not due for renewal.
func (m *Manager) current(leaf *x509.Certificate, names []string) bool {
	if m.opts.Now().Add(RenewBefore).After(leaf.NotAfter) {
		return false
	}
	for _, n := range names {
		if leaf.VerifyHostname(n) != nil {
			return false
		}
	}
	return true
}

func (m *Manager) path(name string) string { return filepath.Join(m.opts.Dir, name) }

func (m *Manager) loadOrCreateCA() (*x509.Certificate, crypto.Signer, []byte, error) {
	certPEM, certErr := os.ReadFile(m.path(caCertFile))
	keyPEM, keyErr := os.ReadFile(m.path(caKeyFile))
	switch {
	case certErr == nil && keyErr == nil:
		pair, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("local CA in %s: %w (move the directory away to create a new CA; enrolled agents pin the old one)", m.opts.Dir, err)
		}
		ca, err := x509.ParseCertificate(pair.Certificate[0])
		if err != nil {
			return nil, nil, nil, fmt.Errorf("local CA in %s: %w", m.opts.Dir, err)
		}
		return ca, pair.PrivateKey.(crypto.Signer), certPEM, nil
	case errors.Is(certErr, os.ErrNotExist) && errors.Is(keyErr, os.ErrNotExist):
	default:
		return nil, nil, nil, fmt.Errorf("local CA in %s is incomplete: %w", m.opts.Dir, errors.Join(certErr, keyErr))
	}

	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, nil, err
	}
	id := make([]byte, 4)
	_, _ = rand.Read(id)
	now := m.opts.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "Cairn local CA " + hex.EncodeToString(id), Organization: []string{"Cairn"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(CALifetime),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, nil, nil, err
	}
	ca, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, nil, nil, err
	}
	certPEM, err = m.writePair(caCertFile, caKeyFile, der, key)
	if err != nil {
		return nil, nil, nil, err
	}
	return ca, key, certPEM, nil
}

// loadServer reads the stored server certificate; it must be the CA's.
func (m *Manager) loadServer(ca *x509.Certificate) (*tls.Certificate, *x509.Certificate, error) {
	pair, err := tls.LoadX509KeyPair(m.path(serverCertFile), m.path(serverKeyFile))
	if err != nil {
		return nil, nil, err
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return nil, nil, err
	}
	if err := leaf.CheckSignatureFrom(ca); err != nil {
		return nil, nil, err
	}
	pair.Leaf = leaf
	return &pair, leaf, nil
}

func (m *Manager) issueServer(ca *x509.Certificate, caKey crypto.Signer, names []string) (*tls.Certificate, *x509.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	now := m.opts.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(ServerLifetime),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	// The first configured name (the public URL's host) is the subject.
	cn := names[0]
	if len(names) > len(loopbackNames) {
		cn = names[len(loopbackNames)]
	}
	tmpl.Subject = pkix.Name{CommonName: cn, Organization: []string{"Cairn"}}
	for _, n := range names {
		if ip := net.ParseIP(n); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, n)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, key.Public(), caKey)
	if err != nil {
		return nil, nil, err
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, nil, err
	}
	if _, err := m.writePair(serverCertFile, serverKeyFile, der, key); err != nil {
		return nil, nil, err
	}
	return &tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, leaf, nil
}

// writePair writes a certificate (0644) and its key (0600), each through a
// temporary file and a rename, and returns the certificate PEM.
func (m *Manager) writePair(certName, keyName string, der []byte, key *ecdsa.PrivateKey) ([]byte, error) {
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})
	if err := writeFile(m.path(keyName), keyPEM, 0o600); err != nil {
		return nil, err
	}
	if err := writeFile(m.path(certName), certPEM, 0o644); err != nil {
		return nil, err
	}
	return certPEM, nil
}

func writeFile(path string, data []byte, mode os.FileMode) error {
	tmp := path + ".tmp"
	_ = os.Remove(tmp)
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		panic(err)
	}
	return n
}

func describe(mode Mode, leaf, ca *x509.Certificate) Info {
	info := Info{Mode: mode, Subject: leaf.Subject.String(), DNSNames: leaf.DNSNames, NotAfter: leaf.NotAfter, Fingerprint: Fingerprint(leaf.Raw)}
	for _, ip := range leaf.IPAddresses {
		info.IPAddresses = append(info.IPAddresses, ip.String())
	}
	if ca != nil {
		info.CAFingerprint = Fingerprint(ca.Raw)
	}
	return info
}

// Fingerprint is the SHA-256 of der as colon-separated upper-case hex, as
// `openssl x509 -noout -fingerprint -sha256` prints it.
func Fingerprint(der []byte) string {
	sum := sha256.Sum256(der)
	var b bytes.Buffer
	for i, c := range sum {
		if i > 0 {
			b.WriteByte(':')
		}
		fmt.Fprintf(&b, "%02X", c)
	}
	return b.String()
}

// LocalCADir is the directory holding the local CA's files (ca.pem and
// ca-key.pem), which backups carry (issue 26); "" for a provided
// certificate, which the operator keeps.
func (m *Manager) LocalCADir() string {
	if m == nil || m.opts.CertFile != "" {
		return ""
	}
	return m.opts.Dir
}
