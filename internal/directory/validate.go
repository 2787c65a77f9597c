package directory

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net"
	"regexp"
	"strings"

	"github.com/go-ldap/ldap/v3"

	"github.com/cairn-rmm/cairn"
	"github.com/cairn-rmm/cairn/internal/auth"
)

const (
	maxName     = 100
	maxMappings = 200
	maxText     = 1024
	maxCAPEM    = 64 << 10
)

var (
	attributePattern = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9-]{0,63}$`)
	hostPattern      = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9.-]{0,251}[A-Za-z0-9])?$`)
)

// validHost accepts DNS names and IP addresses (IPv6 without brackets).
func validHost(h string) bool { return hostPattern.MatchString(h) || net.ParseIP(h) != nil }

// defaults fills what the kind implies: ports 389/636, Active Directory's
// sAMAccountName and memberOf, plain LDAP's uid and group search.
func defaults(set *Settings) {
	set.Name = strings.TrimSpace(set.Name)
	set.Host = strings.ToLower(strings.TrimSpace(set.Host))
	if set.Port == 0 {
		set.Port = 636
		if set.Kind == KindLDAP {
			set.Port = 389
		}
	}
	if set.UsernameAttribute == "" {
		set.UsernameAttribute = "uid"
		if set.Kind == KindAD {
			set.UsernameAttribute = "sAMAccountName"
		}
	}
	if set.GroupMode == "" {
		set.GroupMode = GroupsSearch
		if set.Kind == KindAD {
			set.GroupMode = GroupsMemberOf
		}
	}
	if set.GroupMemberAttribute == "" {
		set.GroupMemberAttribute = "member"
	}
	normalized := make(map[string]string, len(set.HostOverrides))
	for host, ip := range set.HostOverrides {
		normalized[strings.ToLower(strings.TrimSpace(host))] = strings.TrimSpace(ip)
	}
	set.HostOverrides = normalized
}

// check fills defaults and reports every bad field at once.
func (s *Service) check(ctx context.Context, set *Settings, bindPassword *string) error {
	defaults(set)
	var v cairn.Validation
	switch n := len([]rune(set.Name)); {
	case n == 0:
		v.Add("name", "is required")
	case n > maxName:
		v.Add("name", fmt.Sprintf("must be at most %d characters", maxName))
	}
	if set.Kind != KindLDAP && set.Kind != KindLDAPS && set.Kind != KindAD {
		v.Add("kind", "must be ldap, ldaps or active_directory")
	}
	if !validHost(set.Host) {
		v.Add("host", "must be a host name or IP address")
	}
	if set.Port < 1 || set.Port > 65535 {
		v.Add("port", "must be between 1 and 65535")
	}
	checkDN(&v, "base_dn", set.BaseDN, true)
	checkDN(&v, "bind_dn", set.BindDN, false)
	checkDN(&v, "group_base_dn", set.GroupBaseDN, false)
	if set.UserFilter != "" {
		if len(set.UserFilter) > maxText {
			v.Add("user_filter", fmt.Sprintf("must be at most %d characters", maxText))
		} else if _, err := ldap.CompileFilter(set.UserFilter); err != nil {
			v.Add("user_filter", "must be an LDAP filter in parentheses, like (objectClass=person)")
		}
	}
	if !attributePattern.MatchString(set.UsernameAttribute) {
		v.Add("username_attribute", "must be an attribute name")
	}
	if !attributePattern.MatchString(set.GroupMemberAttribute) {
		v.Add("group_member_attribute", "must be an attribute name")
	}
	if set.GroupMode != GroupsMemberOf && set.GroupMode != GroupsSearch {
		v.Add("group_mode", "must be member_of or group_search")
	}
	if bindPassword != nil && *bindPassword != "" && set.BindDN == "" {
		v.Add("bind_dn", "is required with a bind password")
	}
	if bindPassword != nil && len(*bindPassword) > maxText {
		v.Add("bind_password", fmt.Sprintf("must be at most %d characters", maxText))
	}
	checkCA(&v, set)
	for host, ip := range set.HostOverrides {
		if !validHost(host) {
			v.Add("host_overrides", fmt.Sprintf("%q is not a host name", host))
		} else if net.ParseIP(ip) == nil {
			v.Add("host_overrides", fmt.Sprintf("%s must map to an IP address", host))
		}
	}
	s.checkMappings(ctx, &v, set)
	return v.Err()
}

func checkDN(v *cairn.Validation, field, dn string, required bool) {
	switch {
	case dn == "":
		if required {
			v.Add(field, "is required")
		}
	case len(dn) > maxText:
		v.Add(field, fmt.Sprintf("must be at most %d characters", maxText))
	default:
		if _, err := ldap.ParseDN(dn); err != nil {
			v.Add(field, "must be a distinguished name, like dc=example,dc=com")
		}
	}
}

func checkCA(v *cairn.Validation, set *Settings) {
	if set.CAPEM == "" {
		return
	}
	if set.Kind == KindLDAP {
		v.Add("ca_pem", "applies to ldaps and active_directory only")
		return
	}
	if len(set.CAPEM) > maxCAPEM {
		v.Add("ca_pem", "is too large")
		return
	}
	rest, found := []byte(set.CAPEM), false
	for {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if _, err := x509.ParseCertificate(block.Bytes); block.Type != "CERTIFICATE" || err != nil {
			v.Add("ca_pem", "must hold PEM certificates only")
			return
		}
		found = true
	}
	if !found {
		v.Add("ca_pem", "must hold at least one PEM certificate")
	}
}

func (s *Service) checkMappings(ctx context.Context, v *cairn.Validation, set *Settings) {
	if len(set.RoleMappings) > maxMappings {
		v.Add("role_mappings", fmt.Sprintf("must have at most %d entries", maxMappings))
	}
	if len(set.SiteMappings) > maxMappings {
		v.Add("site_mappings", fmt.Sprintf("must have at most %d entries", maxMappings))
	}
	for i, m := range set.RoleMappings {
		set.RoleMappings[i].Group = strings.TrimSpace(m.Group)
		if set.RoleMappings[i].Group == "" || len(m.Group) > maxText {
			v.Add(fmt.Sprintf("role_mappings[%d].group", i), "must name a group (its DN or common name)")
		}
		if m.Role != auth.RoleAdmin && m.Role != auth.RoleOperator {
			v.Add(fmt.Sprintf("role_mappings[%d].role", i), "must be admin or operator")
		}
	}
	if len(set.SiteMappings) == 0 {
		return
	}
	sites, err := s.Sites(ctx)
	if err != nil {
		v.Add("site_mappings", "could not be checked; try again")
		return
	}
	known := make(map[int64]bool, len(sites))
	for _, st := range sites {
		known[st.ID] = true
	}
	for i, m := range set.SiteMappings {
		set.SiteMappings[i].Group = strings.TrimSpace(m.Group)
		if set.SiteMappings[i].Group == "" || len(m.Group) > maxText {
			v.Add(fmt.Sprintf("site_mappings[%d].group", i), "must name a group (its DN or common name)")
		}
		if len(m.SiteIDs) == 0 {
			v.Add(fmt.Sprintf("site_mappings[%d].site_ids", i), "must name at least one site")
		}
		for _, id := range m.SiteIDs {
			if !known[id] {
				v.Add(fmt.Sprintf("site_mappings[%d].site_ids", i), fmt.Sprintf("site %d does not exist", id))
			}
		}
	}
}
