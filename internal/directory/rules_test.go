package directory

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// Mappings match a group by DN (any case and spacing) or by its common
// name; admin wins over operator; sites are the union without repeats.
func TestMapGroups(t *testing.T) {
	t.Parallel()
	set := Settings{
		RoleMappings: []RoleMapping{{Group: "Helpdesk", Role: "operator"}, {Group: "CN=Domain Admins, OU=Groups, DC=corp", Role: "admin"}},
		SiteMappings: []SiteMapping{{Group: "helpdesk", SiteIDs: []int64{1, 2}}, {Group: "cn=branch,ou=groups,dc=corp", SiteIDs: []int64{2, 3}}},
	}
	cases := []struct {
		name   string
		groups []string
		want   Mapped
	}{
		{"none", []string{"cn=other,dc=corp"}, Mapped{}},
		{"by common name", []string{"cn=helpdesk,ou=groups,dc=corp"}, Mapped{Role: "operator", SiteIDs: []int64{1, 2}}},
		{"by DN, admin wins", []string{"cn=helpdesk,dc=corp", "cn=domain admins,ou=groups,dc=corp", "cn=branch,ou=groups,dc=corp"},
			Mapped{Role: "admin", SiteIDs: []int64{1, 2, 3}}},
		{"a DN mapping needs the whole DN", []string{"cn=branch,ou=elsewhere,dc=corp"}, Mapped{}},
		{"unparsable group ignored", []string{"not a dn"}, Mapped{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, mapGroups(set, tc.groups))
		})
	}
}

// Host overrides route the dial to an IP; the name stays for TLS.
func TestTarget(t *testing.T) {
	t.Parallel()
	require.Equal(t, "10.0.0.5:636", target("dc1.corp.example", 636, map[string]string{"dc1.corp.example": "10.0.0.5"}))
	require.Equal(t, "[fd00::1]:389", target("dc1", 389, map[string]string{"dc1": "fd00::1"}))
	require.Equal(t, "dc2.corp.example:636", target("dc2.corp.example", 636, map[string]string{"dc1.corp.example": "10.0.0.5"}))
}

func TestValidHost(t *testing.T) {
	t.Parallel()
	for _, h := range []string{"dc1.corp.example", "10.0.0.5", "fd00::1", "localhost"} {
		require.True(t, validHost(h), h)
	}
	for _, h := range []string{"", "ldap://dc1", "dc1:636", "a b", "-dc1", "[fd00::1]"} {
		require.False(t, validHost(h), h)
	}
}
