package directory

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/go-ldap/ldap/v3"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/db"
)

const (
	dialTimeout = 10 * time.Second
	opTimeout   = 15 * time.Second
)

// errUserNotFound: the provider has no entry for the username.
var errUserNotFound = errors.New("directory: user not found")

// target is where a provider is dialled: host overrides route a name to an
// IP address while TLS still checks the certificate against the name.
func target(host string, port int, overrides map[string]string) string {
	addr := host
	if ip, ok := overrides[strings.ToLower(host)]; ok {
		addr = ip
	}
	return net.JoinHostPort(addr, strconv.Itoa(port))
}

func tlsConfig(set Settings) (*tls.Config, error) {
	cfg := &tls.Config{ServerName: set.Host, MinVersion: tls.VersionTLS12}
	if set.CAPEM != "" {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM([]byte(set.CAPEM)) {
			return nil, errors.New("the CA PEM holds no certificate")
		}
		cfg.RootCAs = pool
	}
	return cfg, nil
}

// connect dials the provider and binds as the service account (or stays
// anonymous without a bind DN).
func connect(set Settings, bindPassword string) (*ldap.Conn, error) {
	scheme := "ldaps"
	if set.Kind == KindLDAP {
		scheme = "ldap"
	}
	cfg, err := tlsConfig(set)
	if err != nil {
		return nil, err
	}
	c, err := ldap.DialURL(scheme+"://"+target(set.Host, set.Port, set.HostOverrides),
		ldap.DialWithDialer(&net.Dialer{Timeout: dialTimeout}), ldap.DialWithTLSConfig(cfg))
	if err != nil {
		return nil, fmt.Errorf("connect to %s:%d: %w", set.Host, set.Port, err)
	}
	c.SetTimeout(opTimeout)
	if set.BindDN != "" {
		if err := c.Bind(set.BindDN, bindPassword); err != nil {
			c.Close()
			return nil, fmt.Errorf("bind as %s: %w", set.BindDN, err)
		}
	}
	return c, nil
}

// userEntry is a directory user found by username.
type userEntry struct {
	DN         string
	Attributes map[string][]string
	Groups     []string
}

// findUser searches the user by username with the service account's
// connection and resolves the user's groups. The username is escaped: it
// comes from whoever types into the login form.
func findUser(c *ldap.Conn, set Settings, username string) (userEntry, error) {
	filter := "(" + set.UsernameAttribute + "=" + ldap.EscapeFilter(username) + ")"
	if set.UserFilter != "" {
		filter = "(&" + set.UserFilter + filter + ")"
	}
	attrs := []string{set.UsernameAttribute, "cn", "displayName", "mail", "memberOf"}
	res, err := c.Search(ldap.NewSearchRequest(set.BaseDN, ldap.ScopeWholeSubtree, ldap.NeverDerefAliases, 2, int(opTimeout/time.Second),
		false, filter, attrs, nil))
	if err != nil && !ldap.IsErrorWithCode(err, ldap.LDAPResultSizeLimitExceeded) {
		return userEntry{}, fmt.Errorf("search user: %w", err)
	}
	switch {
	case res == nil || len(res.Entries) == 0:
		return userEntry{}, errUserNotFound
	case len(res.Entries) > 1:
		return userEntry{}, fmt.Errorf("search user: more than one entry has %s=%s", set.UsernameAttribute, username)
	}
	e := res.Entries[0]
	u := userEntry{DN: e.DN, Attributes: map[string][]string{}}
	for _, a := range e.Attributes {
		u.Attributes[a.Name] = a.Values
	}
	if set.GroupMode == GroupsMemberOf {
		u.Groups = e.GetAttributeValues("memberOf")
		return u, nil
	}
	base := set.GroupBaseDN
	if base == "" {
		base = set.BaseDN
	}
	gres, err := c.Search(ldap.NewSearchRequest(base, ldap.ScopeWholeSubtree, ldap.NeverDerefAliases, 0, int(opTimeout/time.Second),
		false, "("+set.GroupMemberAttribute+"="+ldap.EscapeFilter(e.DN)+")", []string{"dn"}, nil))
	if err != nil {
		return userEntry{}, fmt.Errorf("search groups: %w", err)
	}
	for _, g := range gres.Entries {
		u.Groups = append(u.Groups, g.DN)
	}
	return u, nil
}

// checkUserPassword binds as the user on a fresh connection, so the service
// account's connection stays bound as the service account. An empty
// password is refused here: LDAP treats it as an unauthenticated bind that
// "succeeds".
func checkUserPassword(set Settings, dn, password string) (bool, error) {
	if password == "" {
		return false, nil
	}
	c, err := connect(Settings{Kind: set.Kind, Host: set.Host, Port: set.Port, CAPEM: set.CAPEM, HostOverrides: set.HostOverrides}, "")
	if err != nil {
		return false, err
	}
	defer c.Close()
	if err := c.Bind(dn, password); err != nil {
		if ldap.IsErrorWithCode(err, ldap.LDAPResultInvalidCredentials) {
			return false, nil
		}
		return false, fmt.Errorf("bind as the user: %w", err)
	}
	return true, nil
}

// Mapped is what a user's groups give: the role ("" for none) and sites.
type Mapped struct {
	Role    string
	SiteIDs []int64
}

// mapGroups applies the mappings. A mapping names a group by DN or by the
// value of its first RDN (its common name), compared case-insensitively.
// Admin wins over operator.
func mapGroups(set Settings, groups []string) Mapped {
	var m Mapped
	seen := map[int64]bool{}
	for _, rm := range set.RoleMappings {
		if memberOf(groups, rm.Group) && (m.Role == "" || rm.Role == "admin") {
			m.Role = rm.Role
		}
	}
	for _, sm := range set.SiteMappings {
		if !memberOf(groups, sm.Group) {
			continue
		}
		for _, id := range sm.SiteIDs {
			if !seen[id] {
				seen[id] = true
				m.SiteIDs = append(m.SiteIDs, id)
			}
		}
	}
	return m
}

func memberOf(groups []string, name string) bool {
	want, dnErr := ldap.ParseDN(name)
	for _, g := range groups {
		dn, err := ldap.ParseDN(g)
		if err != nil {
			continue
		}
		if dnErr == nil && len(want.RDNs) > 1 && dn.EqualFold(want) {
			return true
		}
		if len(dn.RDNs) > 0 && len(dn.RDNs[0].Attributes) > 0 && strings.EqualFold(dn.RDNs[0].Attributes[0].Value, name) {
			return true
		}
	}
	return false
}

// Test runs the connectivity test (dial, TLS, service-account bind, base
// DN read) and records its result.
func (s *Service) Test(ctx context.Context, id int64) (TestResult, error) {
	row, set, password, err := s.load(ctx, id)
	if err != nil {
		return TestResult{}, err
	}
	res := TestResult{OK: true, Message: "connected, bound and read the base DN"}
	if err := testConnection(set, password); err != nil {
		res = TestResult{Message: err.Error()}
	}
	if err := s.store.DirectoryProviderRecordTest(ctx, db.DirectoryProviderRecordTestParams{ID: row.ID, Ok: &res.OK, Message: res.Message}); err != nil {
		return TestResult{}, err
	}
	p, err := s.Get(ctx, id)
	if err != nil {
		return TestResult{}, err
	}
	return *p.LastTest, nil
}

func testConnection(set Settings, password string) error {
	c, err := connect(set, password)
	if err != nil {
		return err
	}
	defer c.Close()
	_, err = c.Search(ldap.NewSearchRequest(set.BaseDN, ldap.ScopeBaseObject, ldap.NeverDerefAliases, 1, int(opTimeout/time.Second),
		false, "(objectClass=*)", []string{"dn"}, nil))
	if err != nil {
		return fmt.Errorf("read base DN %s: %w", set.BaseDN, err)
	}
	return nil
}

// load returns a provider's row, settings and opened bind password.
func (s *Service) load(ctx context.Context, id int64) (db.DirectoryProvider, Settings, string, error) {
	r, err := s.store.DirectoryProviderGet(ctx, id)
	if err != nil {
		return db.DirectoryProvider{}, Settings{}, "", db.NotFound(err, "directory provider %d not found", id)
	}
	set, err := settingsOf(r.DirectoryProvider)
	if err != nil {
		return db.DirectoryProvider{}, Settings{}, "", err
	}
	password, err := s.bindPassword(r.DirectoryProvider)
	return r.DirectoryProvider, set, password, err
}

// Certificate is a peer certificate shown for review before trusting it.
type Certificate struct {
	Subject           string
	Issuer            string
	SANs              []string
	NotBefore         time.Time
	NotAfter          time.Time
	SHA256Fingerprint string
	PEM               string
}

// FetchCertificate connects with TLS to host:port and returns the peer's
// leaf certificate without trusting it: the point is for an administrator
// to review it and paste it as the provider's CA.
func FetchCertificate(ctx context.Context, host string, port int, overrides map[string]string) (Certificate, error) {
	host = strings.ToLower(strings.TrimSpace(host))
	var v cairn.Validation
	if !validHost(host) {
		v.Add("host", "must be a host name or IP address")
	}
	if port < 1 || port > 65535 {
		v.Add("port", "must be between 1 and 65535")
	}
	norm := map[string]string{}
	for h, ip := range overrides {
		if net.ParseIP(strings.TrimSpace(ip)) == nil {
			v.Add("host_overrides", fmt.Sprintf("%s must map to an IP address", h))
		}
		norm[strings.ToLower(strings.TrimSpace(h))] = strings.TrimSpace(ip)
	}
	if err := v.Err(); err != nil {
		return Certificate{}, err
	}
	d := &tls.Dialer{NetDialer: &net.Dialer{Timeout: dialTimeout},
		// Verification is skipped on purpose: nothing is sent over this
		// connection, and the certificate is only shown, not trusted.
		Config: &tls.Config{ServerName: host, InsecureSkipVerify: true, MinVersion: tls.VersionTLS12}} //nolint:gosec
	ctx, cancel := context.WithTimeout(ctx, dialTimeout)
	defer cancel()
	conn, err := d.DialContext(ctx, "tcp", target(host, port, norm))
	if err != nil {
		return Certificate{}, cairn.Errorf(cairn.ECodeUnavailable, "TLS connection to %s:%d failed: %v", host, port, err)
	}
	defer conn.Close()
	certs := conn.(*tls.Conn).ConnectionState().PeerCertificates
	if len(certs) == 0 {
		return Certificate{}, cairn.Errorf(cairn.ECodeUnavailable, "%s:%d sent no certificate", host, port)
	}
	leaf := certs[0]
	sum := sha256.Sum256(leaf.Raw)
	sans := append([]string{}, leaf.DNSNames...)
	for _, ip := range leaf.IPAddresses {
		sans = append(sans, ip.String())
	}
	return Certificate{Subject: leaf.Subject.String(), Issuer: leaf.Issuer.String(), SANs: sans,
		NotBefore: leaf.NotBefore, NotAfter: leaf.NotAfter, SHA256Fingerprint: colonHex(sum[:]),
		PEM: string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: leaf.Raw}))}, nil
}

func colonHex(b []byte) string {
	parts := make([]string, len(b))
	for i, x := range b {
		parts[i] = strings.ToUpper(hex.EncodeToString([]byte{x}))
	}
	return strings.Join(parts, ":")
}
