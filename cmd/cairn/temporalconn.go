package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"go.temporal.io/sdk/client"
)

// temporalConn is how the Engine reaches TEMPORAL_ADDRESS: TLS, a client
// certificate (mTLS), an API key. Whoever reaches Temporal's frontend can
// make agents act (docs/architecture.md "Temporal connection security"),
// so a production cluster should require one of them.
type temporalConn struct {
	// TLS turns TLS on with nothing else set (the system roots verify the
	// server); any other TLS setting, or an API key, turns it on too.
	TLS bool
	// CertFile and KeyFile are the client certificate (PEM chain) and key;
	// both or neither. They are read again when they change on disk.
	CertFile, KeyFile string
	// CAFile verifies the server's certificate instead of the system roots.
	CAFile string
	// ServerName is the name the server's certificate must carry (default
	// the host of TEMPORAL_ADDRESS).
	ServerName string
	// APIKey is read from the environment only: a flag would show it in
	// the process list. APIKeyFile is read again when it changes.
	APIKey     string
	APIKeyFile string
	// APIKeyPlaintext lets an API key go without TLS (to a TLS-terminating
	// sidecar on the same host, say); by default an API key implies TLS.
	APIKeyPlaintext bool
}

// temporalConnFlags reads TEMPORAL_TLS* and TEMPORAL_API_KEY* into flags of
// the same meaning (TEMPORAL_API_KEY has none).
func temporalConnFlags(fs *flag.FlagSet, tc *temporalConn) {
	fs.BoolVar(&tc.TLS, "temporal-tls", env("TEMPORAL_TLS", "") == "1",
		"connect to temporal-address over TLS even without the other temporal-tls settings (the system roots verify the server)")
	fs.StringVar(&tc.CertFile, "temporal-tls-cert", env("TEMPORAL_TLS_CERT", ""), "PEM client certificate (chain) for Temporal mTLS; reloaded when it changes")
	fs.StringVar(&tc.KeyFile, "temporal-tls-key", env("TEMPORAL_TLS_KEY", ""), "PEM private key of temporal-tls-cert")
	fs.StringVar(&tc.CAFile, "temporal-tls-ca", env("TEMPORAL_TLS_CA", ""), "PEM CA certificates that verify Temporal's server certificate (default the system roots)")
	fs.StringVar(&tc.ServerName, "temporal-tls-server-name", env("TEMPORAL_TLS_SERVER_NAME", ""), "name Temporal's server certificate must carry (default the host of temporal-address)")
	tc.APIKey = env("TEMPORAL_API_KEY", "")
	fs.StringVar(&tc.APIKeyFile, "temporal-api-key-file", env("TEMPORAL_API_KEY_FILE", ""), "file holding the Temporal API key (env TEMPORAL_API_KEY gives it directly); reloaded when it changes")
	fs.BoolVar(&tc.APIKeyPlaintext, "temporal-api-key-plaintext", env("TEMPORAL_API_KEY_PLAINTEXT", "") == "1",
		"send the API key without TLS (only to a TLS-terminating proxy on the same host)")
}

// tlsOn reports whether the connection uses TLS.
func (tc temporalConn) tlsOn() bool {
	return tc.TLS || tc.CertFile != "" || tc.CAFile != "" || tc.ServerName != "" ||
		(tc.hasAPIKey() && !tc.APIKeyPlaintext)
}

func (tc temporalConn) hasAPIKey() bool { return tc.APIKey != "" || tc.APIKeyFile != "" }

// configured reports whether any setting is given.
func (tc temporalConn) configured() bool {
	return tc.tlsOn() || tc.KeyFile != "" || tc.hasAPIKey() || tc.APIKeyPlaintext
}

// check refuses contradictory settings; it reads no file (connection does).
func (tc temporalConn) check(address string) error {
	if address == "" && tc.configured() {
		return errors.New("TEMPORAL_TLS* and TEMPORAL_API_KEY* configure the connection to TEMPORAL_ADDRESS, which is empty: " +
			"the embedded Temporal server serves plain gRPC on 127.0.0.1 only; set TEMPORAL_ADDRESS or unset them")
	}
	if (tc.CertFile == "") != (tc.KeyFile == "") {
		return errors.New("temporal-tls-cert and temporal-tls-key (TEMPORAL_TLS_CERT, TEMPORAL_TLS_KEY) go together: a client certificate needs its key")
	}
	if tc.APIKey != "" && tc.APIKeyFile != "" {
		return errors.New("set TEMPORAL_API_KEY or TEMPORAL_API_KEY_FILE, not both")
	}
	return nil
}

// connection reads the files and returns the client's connection options
// and credentials. Errors name files and settings, never their content.
func (tc temporalConn) connection(log *slog.Logger) (client.ConnectionOptions, client.Credentials, error) {
	var opts client.ConnectionOptions
	var creds client.Credentials
	if tc.tlsOn() {
		conf := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: tc.ServerName}
		if tc.CAFile != "" {
			roots, err := readCAFile(tc.CAFile)
			if err != nil {
				return opts, nil, err
			}
			conf.RootCAs = roots
		}
		if tc.CertFile != "" {
			r := &certReloader{certFile: tc.CertFile, keyFile: tc.KeyFile, log: log}
			if err := r.load(); err != nil {
				return opts, nil, err
			}
			conf.GetClientCertificate = r.GetClientCertificate
		}
		opts.TLS = conf
	}
	switch {
	case tc.APIKey != "":
		creds = client.NewAPIKeyStaticCredentials(tc.APIKey)
	case tc.APIKeyFile != "":
		r := &apiKeyReloader{file: tc.APIKeyFile, log: log}
		if err := r.load(); err != nil {
			return opts, nil, err
		}
		creds = client.NewAPIKeyDynamicCredentials(func(context.Context) (string, error) { return r.key(), nil })
	}
	return opts, creds, nil
}

// describe is the connection for the log: no secret, no key material.
func (tc temporalConn) describe() []any {
	attrs := []any{"tls", tc.tlsOn(), "client_certificate", tc.CertFile != "", "api_key", tc.hasAPIKey()}
	if tc.CAFile != "" {
		attrs = append(attrs, "ca_file", tc.CAFile)
	}
	if tc.ServerName != "" {
		attrs = append(attrs, "server_name", tc.ServerName)
	}
	return attrs
}

func readCAFile(path string) (*x509.CertPool, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("temporal-tls-ca (TEMPORAL_TLS_CA): %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("temporal-tls-ca (TEMPORAL_TLS_CA) %s holds no PEM certificate", path)
	}
	return pool, nil
}

// stamp is what tells a file changed: a rotation writes or renames a new
// file in, which moves one or both.
type stamp struct {
	mod  time.Time
	size int64
}

func statStamp(path string) (stamp, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return stamp{}, err
	}
	return stamp{fi.ModTime(), fi.Size()}, nil
}

// certReloader hands the TLS handshake the client certificate, read again
// whenever the certificate or key file changed (a stat per handshake), so
// a rotated certificate needs no restart. A pair that fails to load (half
// written, mismatched) keeps the previous one, with one warning.
type certReloader struct {
	certFile, keyFile string
	log               *slog.Logger

	mu         sync.Mutex
	cert       *tls.Certificate
	loaded     [2]stamp
	lastFailed [2]stamp
}

// load reads the pair; at start its error stops the Engine.
func (r *certReloader) load() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	st, err := r.stamps()
	if err != nil {
		return err
	}
	cert, err := loadKeyPair(r.certFile, r.keyFile)
	if err != nil {
		return err
	}
	r.cert, r.loaded = cert, st
	return nil
}

func (r *certReloader) stamps() ([2]stamp, error) {
	c, err := statStamp(r.certFile)
	if err != nil {
		return [2]stamp{}, fmt.Errorf("temporal-tls-cert (TEMPORAL_TLS_CERT): %w", err)
	}
	k, err := statStamp(r.keyFile)
	if err != nil {
		return [2]stamp{}, fmt.Errorf("temporal-tls-key (TEMPORAL_TLS_KEY): %w", err)
	}
	return [2]stamp{c, k}, nil
}

// GetClientCertificate is tls.Config's: it sends the certificate whatever
// CAs the server names, so a refusal comes from the server, in its words.
func (r *certReloader) GetClientCertificate(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	st, err := r.stamps()
	if err == nil && st == r.loaded {
		return r.cert, nil
	}
	if err == nil {
		var cert *tls.Certificate
		if cert, err = loadKeyPair(r.certFile, r.keyFile); err == nil {
			r.cert, r.loaded = cert, st
			r.log.Info("Temporal client certificate reloaded", "cert_file", r.certFile,
				"subject", cert.Leaf.Subject.String(), "not_after", cert.Leaf.NotAfter)
			return r.cert, nil
		}
	}
	if st != r.lastFailed {
		r.lastFailed = st
		r.log.Warn("Temporal client certificate changed but does not load; the previous one stays in use", "err", err)
	}
	return r.cert, nil
}

// loadKeyPair reads a PEM certificate chain and its key. tls.X509KeyPair's
// errors describe PEM blocks and mismatches, never their bytes.
func loadKeyPair(certFile, keyFile string) (*tls.Certificate, error) {
	certPEM, err := os.ReadFile(certFile)
	if err != nil {
		return nil, fmt.Errorf("temporal-tls-cert (TEMPORAL_TLS_CERT): %w", err)
	}
	keyPEM, err := os.ReadFile(keyFile)
	if err != nil {
		return nil, fmt.Errorf("temporal-tls-key (TEMPORAL_TLS_KEY): %w", err)
	}
	if b, _ := pem.Decode(certPEM); b == nil || b.Type != "CERTIFICATE" {
		return nil, fmt.Errorf("temporal-tls-cert (TEMPORAL_TLS_CERT) %s does not start with a PEM certificate", certFile)
	}
	if b, _ := pem.Decode(keyPEM); b == nil || !strings.HasSuffix(b.Type, "PRIVATE KEY") {
		return nil, fmt.Errorf("temporal-tls-key (TEMPORAL_TLS_KEY) %s does not start with a PEM private key", keyFile)
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("Temporal client certificate %s and key %s: %w", certFile, keyFile, err)
	}
	return &cert, nil
}

// apiKeyReloader is the API key of a file, read again when it changed (a
// stat per request); an unreadable or empty file keeps the previous key.
type apiKeyReloader struct {
	file string
	log  *slog.Logger

	mu         sync.Mutex
	value      string
	loaded     stamp
	lastFailed stamp
}

func (r *apiKeyReloader) load() error {
	st, err := statStamp(r.file)
	if err != nil {
		return fmt.Errorf("temporal-api-key-file (TEMPORAL_API_KEY_FILE): %w", err)
	}
	v, err := readAPIKey(r.file)
	if err != nil {
		return err
	}
	r.mu.Lock()
	r.value, r.loaded = v, st
	r.mu.Unlock()
	return nil
}

func (r *apiKeyReloader) key() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	st, err := statStamp(r.file)
	if err == nil && st == r.loaded {
		return r.value
	}
	if err == nil {
		var v string
		if v, err = readAPIKey(r.file); err == nil {
			r.value, r.loaded = v, st
			r.log.Info("Temporal API key reloaded", "file", r.file)
			return v
		}
	}
	if st != r.lastFailed {
		r.lastFailed = st
		r.log.Warn("Temporal API key file changed but does not load; the previous key stays in use", "err", err)
	}
	return r.value
}

func readAPIKey(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("temporal-api-key-file (TEMPORAL_API_KEY_FILE): %w", err)
	}
	v := strings.TrimSpace(string(b))
	if v == "" {
		return "", fmt.Errorf("temporal-api-key-file (TEMPORAL_API_KEY_FILE) %s is empty", path)
	}
	return v, nil
}
