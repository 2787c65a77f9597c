package slapdtest_test

import (
	"crypto/tls"
	"crypto/x509"
	"strconv"
	"testing"

	"github.com/go-ldap/ldap/v3"
	"github.com/stretchr/testify/require"

	"github.com/cairn-rmm/cairn/internal/slapdtest"
)

// The harness serves LDAP and LDAPS, lets the service account search and
// users bind, and keeps anonymous callers out.
func TestServer(t *testing.T) {
	srv, err := slapdtest.Start()
	require.NoError(t, err)
	defer srv.Stop()
	uid := slapdtest.Unique("harness")
	dn := srv.User(t, uid, "user password 1")
	group := srv.Group(t, slapdtest.Unique("grp"), dn)

	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM([]byte(srv.CAPEM)))
	c, err := ldap.DialURL("ldaps://127.0.0.1:"+strconv.Itoa(srv.TLSPort), ldap.DialWithTLSConfig(&tls.Config{ServerName: slapdtest.TLSHost, RootCAs: pool}))
	require.NoError(t, err)
	defer c.Close()
	res, err := c.Search(ldap.NewSearchRequest(slapdtest.BaseDN, ldap.ScopeWholeSubtree, ldap.NeverDerefAliases, 0, 0, false, "(uid="+uid+")", nil, nil))
	if err == nil {
		require.Empty(t, res.Entries, "anonymous search must see nothing")
	}
	require.NoError(t, c.Bind(slapdtest.ServiceDN, slapdtest.ServicePassword))
	res, err = c.Search(ldap.NewSearchRequest(slapdtest.BaseDN, ldap.ScopeWholeSubtree, ldap.NeverDerefAliases, 0, 0, false, "(uid="+uid+")", []string{"memberOf"}, nil))
	require.NoError(t, err)
	require.Len(t, res.Entries, 1)
	require.Equal(t, []string{group}, res.Entries[0].GetAttributeValues("memberOf"))
	require.NoError(t, c.Bind(dn, "user password 1"))
	require.Error(t, c.Bind(dn, "wrong"))
}
