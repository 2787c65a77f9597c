package transport

// Trust in the Engine (SPEC "Authentication" rule 6): its certificate must
// name the FQDN of server_url and chain to the Engine's CA pinned in
// agent.json (internal_ca_pem) when one is pinned, else to a public root of
// the system. A pinned agent trusts public roots too only when agent.json
// says trust_public_cas (issue 13 item 15): otherwise any public CA (or
// one an attacker got into the system store) could vouch for the Engine.

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

// tlsConfig trusts the pinned CA alone, or the system roots when none is
// pinned; with trustPublic the pinned CA is added to the system roots.
// systemRoots is x509.SystemCertPool outside tests. The server name is
// left empty on purpose: http.Transport fills it from the request URL's
// host, which is the FQDN even when the TCP connection went to the
// fallback IP.
func tlsConfig(caPEM string, trustPublic bool, systemRoots func() (*x509.CertPool, error)) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if caPEM == "" {
		// Nothing pinned: the system roots (trust_public_cas changes
		// nothing). nil RootCAs is the platform verifier.
		if systemRoots != nil {
			pool, err := systemRoots()
			if err != nil {
				return nil, fmt.Errorf("system roots: %w", err)
			}
			cfg.RootCAs = pool
		}
		return cfg, nil
	}
	if systemRoots == nil {
		systemRoots = x509.SystemCertPool
	}
	cas, err := ParseCAPEM(caPEM)
	if err != nil {
		return nil, fmt.Errorf("internal_ca_pem: %w", err)
	}
	pool := x509.NewCertPool()
	if trustPublic {
		// Kept for an Engine moving to a publicly issued certificate: its
		// agents keep working through the move. On Windows and macOS Go
		// still asks the platform verifier first and falls back to the
		// added certificates.
		if sys, err := systemRoots(); err == nil && sys != nil {
			pool = sys
		}
	}
	for _, ca := range cas {
		pool.AddCert(ca)
	}
	cfg.RootCAs = pool
	return cfg, nil
}
