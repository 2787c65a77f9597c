package cairn

import "slices"

// SiteScope is what part of the fleet a caller may see: every site (admins)
// or the listed ones (an operator's assignments). Every device-scoped query
// takes one, so scope is enforced in one place rather than per handler, and
// something outside it is indistinguishable from something that does not
// exist.
type SiteScope struct {
	All     bool
	SiteIDs []int64
}

// AllSites is the scope of administrators and of the Engine itself.
var AllSites = SiteScope{All: true}

// Allows reports whether site is inside the scope.
func (s SiteScope) Allows(site int64) bool { return s.All || slices.Contains(s.SiteIDs, site) }

// IDs returns the site IDs for a query parameter (never nil, so the SQL
// array is empty rather than NULL).
func (s SiteScope) IDs() []int64 {
	if s.SiteIDs == nil {
		return []int64{}
	}
	return s.SiteIDs
}
