// Package slapdtest runs a private OpenLDAP server (Debian's slapd) for
// tests of directory sign-in: plain LDAP and LDAPS on free loopback ports,
// a self-signed certificate made here, a base DN with a service account,
// and helpers to add users and groups. One server per test binary (start it
// in TestMain); tests keep apart by using distinct entries.
package slapdtest

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"text/template"
	"time"

	"github.com/go-ldap/ldap/v3"
)

// Fixed names of the test directory.
const (
	BaseDN          = "dc=cairn,dc=test"
	RootDN          = "cn=admin," + BaseDN
	ServiceDN       = "cn=svc," + BaseDN
	ServicePassword = "service account password"
	// TLSHost is the name in the certificate; host overrides route it to
	// 127.0.0.1 (it does not resolve otherwise).
	TLSHost = "ldap.cairn.test"
)

// Server is a running slapd.
type Server struct {
	Port    int // plain LDAP on 127.0.0.1
	TLSPort int // LDAPS on 127.0.0.1
	// CAPEM is the self-signed certificate slapd presents on TLSPort.
	CAPEM  string
	rootPW string
	dir    string
	cmd    *exec.Cmd
	exited chan struct{}
}

var slapdBinaries = []string{"/usr/sbin/slapd", "slapd"}

// Start writes a configuration into a temporary directory and starts slapd.
func Start() (*Server, error) {
	bin := ""
	for _, b := range slapdBinaries {
		if p, err := exec.LookPath(b); err == nil {
			bin = p
			break
		}
	}
	if bin == "" {
		return nil, errors.New("slapdtest: slapd is needed for directory tests (scripts/deps.sh test installs it)")
	}
	dir, err := os.MkdirTemp("", "cairn-slapd-")
	if err != nil {
		return nil, err
	}
	s := &Server{dir: dir, rootPW: randomHex(12), exited: make(chan struct{})}
	if err := s.start(bin); err != nil {
		s.Stop()
		return nil, err
	}
	return s, nil
}

func (s *Server) start(bin string) error {
	certPEM, keyPEM, err := selfSigned()
	if err != nil {
		return err
	}
	s.CAPEM = string(certPEM)
	if err := os.Mkdir(filepath.Join(s.dir, "data"), 0o700); err != nil {
		return err
	}
	files := map[string][]byte{"cert.pem": certPEM, "key.pem": keyPEM}
	var conf bytes.Buffer
	if err := confTemplate.Execute(&conf, map[string]string{"Dir": s.dir, "Suffix": BaseDN, "RootDN": RootDN, "RootPW": s.rootPW}); err != nil {
		return err
	}
	files["slapd.conf"] = conf.Bytes()
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(s.dir, name), data, 0o600); err != nil {
			return err
		}
	}
	if s.Port, err = freePort(); err != nil {
		return err
	}
	if s.TLSPort, err = freePort(); err != nil {
		return err
	}
	urls := fmt.Sprintf("ldap://127.0.0.1:%d/ ldaps://127.0.0.1:%d/", s.Port, s.TLSPort)
	// -d keeps slapd in the foreground so it dies with the test binary.
	args := []string{"-f", filepath.Join(s.dir, "slapd.conf"), "-h", urls, "-d", "0"}
	if os.Geteuid() == 0 {
		// slapd refuses nothing as root, but running it as the package's
		// own unprivileged user is what a real system does.
		if u, err := user.Lookup("openldap"); err == nil {
			if err := chownTree(s.dir, u); err != nil {
				return err
			}
			args = append(args, "-u", "openldap", "-g", "openldap")
		}
	}
	s.cmd = exec.Command(bin, args...)
	var stderr bytes.Buffer
	s.cmd.Stderr = &stderr
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := s.cmd.Start(); err != nil {
		return err
	}
	go func() { _ = s.cmd.Wait(); close(s.exited) }()
	deadline := time.Now().Add(15 * time.Second)
	for {
		select {
		case <-s.exited:
			return fmt.Errorf("slapdtest: slapd exited: %s", stderr.String())
		default:
		}
		if c, err := s.root(); err == nil {
			defer c.Close()
			return s.seed(c)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("slapdtest: slapd did not answer: %s", stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// seed adds the base entry, the organizational units and the service
// account.
func (s *Server) seed(c *ldap.Conn) error {
	entries := []struct {
		dn    string
		attrs map[string][]string
	}{
		{BaseDN, map[string][]string{"objectClass": {"dcObject", "organization"}, "dc": {"cairn"}, "o": {"Cairn test"}}},
		{"ou=people," + BaseDN, map[string][]string{"objectClass": {"organizationalUnit"}, "ou": {"people"}}},
		{"ou=groups," + BaseDN, map[string][]string{"objectClass": {"organizationalUnit"}, "ou": {"groups"}}},
		{ServiceDN, map[string][]string{"objectClass": {"person"}, "cn": {"svc"}, "sn": {"service"}, "userPassword": {ServicePassword}}},
	}
	for _, e := range entries {
		if err := add(c, e.dn, e.attrs); err != nil {
			return err
		}
	}
	return nil
}

func (s *Server) root() (*ldap.Conn, error) {
	c, err := ldap.DialURL("ldap://127.0.0.1:" + strconv.Itoa(s.Port))
	if err != nil {
		return nil, err
	}
	if err := c.Bind(RootDN, s.rootPW); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// Stop ends slapd and removes its files.
func (s *Server) Stop() {
	if s.cmd != nil && s.cmd.Process != nil {
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
	_ = os.RemoveAll(s.dir)
}

// User adds inetOrgPerson uid=<uid> under ou=people and returns its DN.
func (s *Server) User(t testing.TB, uid, password string) string {
	t.Helper()
	dn := "uid=" + ldap.EscapeDN(uid) + ",ou=people," + BaseDN
	s.add(t, dn, map[string][]string{"objectClass": {"inetOrgPerson"}, "uid": {uid}, "cn": {uid}, "sn": {uid},
		"mail": {uid + "@cairn.test"}, "userPassword": {password}})
	return dn
}

// Group adds groupOfNames cn=<cn> under ou=groups with members and returns
// its DN.
func (s *Server) Group(t testing.TB, cn string, members ...string) string {
	t.Helper()
	dn := "cn=" + ldap.EscapeDN(cn) + ",ou=groups," + BaseDN
	s.add(t, dn, map[string][]string{"objectClass": {"groupOfNames"}, "cn": {cn}, "member": members})
	return dn
}

// Delete removes an entry.
func (s *Server) Delete(t testing.TB, dn string) {
	t.Helper()
	c, err := s.root()
	if err != nil {
		t.Fatalf("slapdtest: %v", err)
	}
	defer c.Close()
	if err := c.Del(ldap.NewDelRequest(dn, nil)); err != nil {
		t.Fatalf("slapdtest: delete %s: %v", dn, err)
	}
}

func (s *Server) add(t testing.TB, dn string, attrs map[string][]string) {
	t.Helper()
	c, err := s.root()
	if err != nil {
		t.Fatalf("slapdtest: %v", err)
	}
	defer c.Close()
	if err := add(c, dn, attrs); err != nil {
		t.Fatalf("slapdtest: %v", err)
	}
}

func add(c *ldap.Conn, dn string, attrs map[string][]string) error {
	req := ldap.NewAddRequest(dn, nil)
	for name, vals := range attrs {
		req.Attribute(name, vals)
	}
	if err := c.Add(req); err != nil {
		return fmt.Errorf("add %s: %w", dn, err)
	}
	return nil
}

// Unique returns prefix plus random hex, for entry names tests own.
func Unique(prefix string) string { return prefix + "-" + randomHex(4) }

// The access rules make the service-account bind matter: anonymous callers
// may only authenticate, never search.
var confTemplate = template.Must(template.New("slapd.conf").Parse(`include /etc/ldap/schema/core.schema
include /etc/ldap/schema/cosine.schema
include /etc/ldap/schema/inetorgperson.schema
modulepath /usr/lib/ldap
moduleload back_mdb
moduleload memberof
pidfile {{.Dir}}/slapd.pid
TLSCertificateFile {{.Dir}}/cert.pem
TLSCertificateKeyFile {{.Dir}}/key.pem
database mdb
suffix "{{.Suffix}}"
rootdn "{{.RootDN}}"
rootpw {{.RootPW}}
directory {{.Dir}}/data
maxsize 16777216
overlay memberof
access to attrs=userPassword by self write by anonymous auth by * none
access to * by users read by * none
`))

func selfSigned() (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(time.Now().UnixNano()),
		Subject:               pkix.Name{CommonName: TLSHost, Organization: []string{"Cairn tests"}},
		DNSNames:              []string{TLSHost, "localhost"},
		IPAddresses:           []net.IP{net.ParseIP("127.0.0.1")},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), nil
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

func chownTree(dir string, u *user.User) error {
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return filepath.Walk(dir, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, gid)
	})
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
