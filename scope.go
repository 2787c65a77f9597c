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
func (s SiteScope) Allows(site SiteID) bool { return s.All || slices.Contains(s.SiteIDs, int64(site)) }

// IDs returns the site IDs for a query parameter (never nil, so the SQL
// array is empty rather than NULL).
func (s SiteScope) IDs() []int64 {
	if s.SiteIDs == nil {
		return []int64{}
	}
	return s.SiteIDs
}

// ScopeColumn turns a stored site scope column into a scope: NULL (nil)
// is every site.
func ScopeColumn(ids []int64) SiteScope {
	if ids == nil {
		return AllSites
	}
	return SiteScope{SiteIDs: ids}
}

// Column is the scope as a stored column: nil (NULL) for every site.
func (s SiteScope) Column() []int64 {
	if s.All {
		return nil
	}
	return s.IDs()
}

// Covers reports whether every site of o lies inside s.
func (s SiteScope) Covers(o SiteScope) bool {
	if s.All {
		return true
	}
	if o.All {
		return false
	}
	for _, id := range o.SiteIDs {
		if !s.Allows(SiteID(id)) {
			return false
		}
	}
	return true
}

// Union is the scope holding every site of s and of o.
func (s SiteScope) Union(o SiteScope) SiteScope {
	if s.All || o.All {
		return AllSites
	}
	out := slices.Clone(s.IDs())
	for _, id := range o.SiteIDs {
		if !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return SiteScope{SiteIDs: out}
}

// SiteIDInts turns typed site IDs into the plain integers a scope and a
// SQL array parameter hold.
func SiteIDInts(ids []SiteID) []int64 {
	out := make([]int64, len(ids))
	for i, id := range ids {
		out[i] = int64(id)
	}
	return out
}
