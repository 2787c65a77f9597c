package transport

// Trust in the Engine (SPEC "Authentication" rule 6): its certificate must
// chain to a public root of the system or to the Engine's local CA pinned
// in agent.json (internal_ca_pem), and must name the FQDN of server_url.

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
)

// maxCAFileSize bounds LoadCAFile; a CA bundle is a few kilobytes.
const maxCAFileSize = 1 << 20

// ParseCAPEM returns the CA certificates in pemText. Blocks that are not
// certificates are ignored (a bundle may carry comments or keys next to
// it); certificates that are not CAs are refused, because pinning a leaf
// would break at the Engine's next certificate renewal.
func ParseCAPEM(pemText string) ([]*x509.Certificate, error) {
	var cas []*x509.Certificate
	rest := []byte(pemText)
	for {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("CA certificate %d: %w", len(cas)+1, err)
		}
		if !cert.IsCA {
			return nil, fmt.Errorf("certificate %q is not a CA certificate (pin the Engine's CA, GET /api/tls/ca.pem, not its server certificate)", cert.Subject)
		}
		cas = append(cas, cert)
	}
	if len(cas) == 0 {
		return nil, errors.New("no PEM CERTIFICATE block found")
	}
	return cas, nil
}

// LoadCAFile reads a PEM file for `cairn-agent enroll --ca-file`, checks
// that it holds at least one CA certificate, and returns its text to store
// as internal_ca_pem.
func LoadCAFile(path string) (string, error) {
	info, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	if !info.Mode().IsRegular() {
		return "", fmt.Errorf("CA file %s is not a regular file", path)
	}
	if info.Size() > maxCAFileSize {
		return "", fmt.Errorf("CA file %s is larger than %d bytes", path, maxCAFileSize)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	if _, err := ParseCAPEM(string(data)); err != nil {
		return "", fmt.Errorf("CA file %s: %w", path, err)
	}
	return string(data), nil
}

// tlsConfig trusts the system roots plus the pinned CA. The server name is
// left empty on purpose: http.Transport fills it from the request URL's
// host, which is the FQDN even when the TCP connection went to the
// fallback IP.
func tlsConfig(caPEM string) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if caPEM == "" {
		return cfg, nil // nil RootCAs: the system roots
	}
	cas, err := ParseCAPEM(caPEM)
	if err != nil {
		return nil, fmt.Errorf("internal_ca_pem: %w", err)
	}
	// Adding to the system pool (rather than a fresh pool) keeps public CAs
	// valid, so an Engine that moves to a publicly issued certificate keeps
	// its agents. On Windows and macOS Go still asks the platform verifier
	// first and falls back to the added certificates.
	pool, err := x509.SystemCertPool()
	if err != nil || pool == nil {
		pool = x509.NewCertPool()
	}
	for _, ca := range cas {
		pool.AddCert(ca)
	}
	cfg.RootCAs = pool
	return cfg, nil
}
